"""Device rules that a CPU-only machine can check: read every chapter's code cells and every module of
``memcap`` (ast, nothing executed) and refuse the three patterns that crash only where a GPU is present.

On a CPU-only machine ``torch.zeros(3)`` and a tensor made on ``pick_device()`` are both on the CPU, so a
cell that mixes them runs; on a GPU the first is on the CPU, the second on CUDA, and the cell fails.
The rules:

1. **factory** -- a tensor factory (``torch.tensor``, ``zeros``, ``randn``, ``arange``, ``eye``,
   ``from_numpy``, ...) says where its tensor goes: a ``device=`` argument, or an immediate ``.to(...)``
   that names a device or a tensor (``torch.from_numpy(a).to(dev)``), or ``.cuda()``. ``device="cpu"`` is
   allowed and says that the CPU is meant. (``*_like`` and ``x.new_*`` take their tensor's device.)
2. **draw** -- a random draw from an explicit ``generator=`` happens on the generator's device: no
   ``device=`` (then moved with ``.to(...)``), ``device="cpu"``, or ``device=<generator>.device``. A CPU
   generator asked to draw on CUDA fails there (memcap draws on the generator's device and moves, so a
   seed gives the same numbers everywhere; the book does the same).
3. **numpy** -- ``.numpy()`` on a tensor goes through the CPU first: ``.cpu().numpy()``,
   ``.detach().cpu().numpy()`` or ``.numpy(force=True)``.

What the rules cannot see (a CUDA tensor handed to matplotlib or ``np.asarray``) the GPU run of the
whole book finds (``python -m tests.gpu_book``, recorded in the appendix *Build status*). Exceptions are
few and named in :data:`EXCEPTIONS` with their reason.

``python -m tests.test_device_rules [PATH ...]`` lists the violations of the given files (default: the
book and the library), one per line.
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

FACTORIES = frozenset({
    "tensor", "as_tensor", "asarray", "from_numpy", "scalar_tensor",
    "zeros", "ones", "empty", "full", "eye", "arange", "range", "linspace", "logspace",
    "tril_indices", "triu_indices", "empty_strided",
    "rand", "randn", "randint", "randperm", "normal",
})
"""``torch.<name>(...)`` calls that create a tensor on the default (CPU) device unless told otherwise."""
DRAWS = frozenset({"rand", "randn", "randint", "randperm", "normal"})
"""The factories that take a ``generator=``."""
DTYPES = frozenset({"float16", "float32", "float64", "half", "float", "double", "bfloat16", "int8", "int16",
                    "int32", "int64", "long", "int", "uint8", "bool", "complex64", "complex128"})

EXCEPTIONS: dict[tuple[str, str], str] = {
    ("memcap/device.py", "*"): "decides where tensors go; creates none that meet user data",
}
"""``(path, function)`` -> why the rules do not apply there (``*``: the whole file)."""


def _is_cpu(node: ast.expr) -> bool:
    """``"cpu"``, ``torch.device("cpu")``."""
    if isinstance(node, ast.Constant):
        return node.value == "cpu"
    if isinstance(node, ast.Call) and ast.unparse(node.func) == "torch.device" and node.args:
        return _is_cpu(node.args[0])
    return False


def _moves(call: ast.Call) -> bool:
    """Whether ``call`` (``x.to(...)``/``x.cuda()``) puts its receiver on a device."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr == "cuda":
        return True
    if func.attr != "to":
        return False
    if any(k.arg == "device" for k in call.keywords):
        return True
    if call.args:
        first = call.args[0]
        is_dtype = isinstance(first, ast.Attribute) and ast.unparse(first.value) == "torch" \
            and first.attr in DTYPES
        return not is_dtype and not (isinstance(first, ast.Name) and "dtype" in first.id.lower())
    return False


def _via_cpu(receiver: ast.expr) -> bool:
    """Whether a method chain ``receiver`` (``x.detach().cpu()``) passes through the CPU."""
    node = receiver
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        attr = node.func.attr
        if attr == "cpu":
            return True
        if attr == "to" and (any(_is_cpu(a) for a in node.args)
                             or any(k.arg == "device" and _is_cpu(k.value) for k in node.keywords)):
            return True
        node = node.func.value
    return False


class _Finder(ast.NodeVisitor):
    def __init__(self) -> None:
        self.found: list[tuple[int, str, str, str]] = []   # (line, rule, function, source)
        self._parents: dict[ast.AST, ast.AST] = {}
        self._scope: list[str] = []

    def visit(self, node: ast.AST):  # record parents on the way down
        for child in ast.iter_child_nodes(node):
            self._parents[child] = node
        return super().visit(node)

    def _function(self, node) -> None:
        self._scope.append(node.name)
        self.generic_visit(node)
        self._scope.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _function

    def _report(self, node: ast.AST, rule: str) -> None:
        scope = self._scope[0] if self._scope else "<module>"
        self.found.append((node.lineno, rule, scope, ast.unparse(node)[:100]))

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "torch" \
                and func.attr in FACTORIES:
            self._factory(node, func.attr)
        if isinstance(func, ast.Attribute) and func.attr == "numpy" and not node.args \
                and not any(k.arg == "force" for k in node.keywords) and not _via_cpu(func.value) \
                and not (isinstance(func.value, ast.Name) and func.value.id in {"np", "numpy"}):
            self._report(node, "numpy")
        self.generic_visit(node)

    def _factory(self, node: ast.Call, name: str) -> None:
        keywords = {k.arg: k.value for k in node.keywords}
        if None in keywords:              # **options: may hold the device; the code around it decides
            return
        parent = self._parents.get(node)
        grand = self._parents.get(parent) if parent is not None else None
        moved = isinstance(parent, ast.Attribute) and isinstance(grand, ast.Call) and grand.func is parent \
            and _moves(grand)
        if name in DRAWS and "generator" in keywords and "device" in keywords:
            device, gen = keywords["device"], keywords["generator"]
            on_generator = isinstance(device, ast.Attribute) and device.attr == "device" \
                and ast.dump(device.value) == ast.dump(gen)
            if not (on_generator or _is_cpu(device)):
                self._report(node, "draw")
            return
        if "device" not in keywords and not moved:
            self._report(node, "factory")


def violations(source: str, path: str = "<cell>") -> list[tuple[int, str, str, str]]:
    """The device-rule violations of Python ``source``: ``(line, rule, function, source text)``."""
    finder = _Finder()
    finder.visit(ast.parse(source))
    return [hit for hit in finder.found
            if (path, "*") not in EXCEPTIONS and (path, hit[2]) not in EXCEPTIONS]


_FENCE = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)


def chapter_cells(text: str) -> list[str]:
    """The code of every ``{code-cell}`` of a MyST chapter, its option lines and IPython magics dropped."""
    cells = []
    for body in _FENCE.findall(text):
        lines = body.split("\n")
        if lines and lines[0].strip() == "---":          # a YAML option block
            end = lines.index("---", 1) if "---" in lines[1:] else 0
            lines = lines[end + 1:]
        while lines and lines[0].startswith(":"):         # short options
            lines.pop(0)
        cells.append("\n".join(line for line in lines if not line.lstrip().startswith(("%", "!"))))
    return cells


def chapters() -> list[Path]:
    return sorted(p for p in (ROOT / "book").rglob("*.md") if "{code-cell}" in p.read_text(encoding="utf-8"))


def modules() -> list[Path]:
    return sorted((ROOT / "memcap").rglob("*.py"))


def file_violations(path: Path) -> list[str]:
    """Each violation of one chapter (per cell) or module, as ``path[:cell]:line: rule: source``."""
    rel = path.resolve().relative_to(ROOT).as_posix()
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".md":
        return [f"{rel}: cell {i}, line {line}: {rule}: {src}"
                for i, cell in enumerate(chapter_cells(text)) for line, rule, _, src in violations(cell, rel)]
    return [f"{rel}:{line}: {rule} in {scope}: {src}" for line, rule, scope, src in violations(text, rel)]


# --- the rules can fail ------------------------------------------------------------------------------

@pytest.mark.parametrize("source, rule", [
    ("x = torch.zeros(3)", "factory"),
    ("x = torch.tensor([1.0, 2.0], dtype=torch.float64)", "factory"),
    ("x = torch.arange(5).to(torch.float64)", "factory"),             # a dtype is not a device
    ("x = torch.eye(3).double()", "factory"),
    ("x = torch.from_numpy(a)", "factory"),
    ("x = torch.linspace(0, 1, 9, dtype=F64)", "factory"),
    ("x = torch.randn(3, generator=gen, device=dev)", "draw"),       # a CPU generator drawing on cuda
    ("x = torch.randint(5, (3,), generator=g, device=other.device)", "draw"),
    ("y = x.numpy()", "numpy"),
    ("y = x.detach().numpy()", "numpy"),
    ("y = model(x).sum(0).numpy()", "numpy"),
    ("def f(t):\n    return t.numpy()", "numpy"),
])
def test_the_rules_flag_what_crashes_on_a_gpu(source, rule):
    found = violations(source)
    assert [hit[1] for hit in found] == [rule], found


@pytest.mark.parametrize("source", [
    "x = torch.zeros(3, device=dev)",
    "x = torch.tensor([1.0], dtype=torch.float64, device=contexts.device)",
    "x = torch.zeros(3, device='cpu')",
    "x = torch.from_numpy(a).to(dev)",
    "x = torch.arange(5).to(device=dev, dtype=torch.float64)",
    "x = torch.arange(5).to(contexts)",
    "x = torch.randn(3, generator=gen).to(dev)",
    "x = torch.randn(3, generator=gen, device=gen.device).to(dev)",
    "x = torch.randn(3, generator=gen, device='cpu')",
    "x = torch.zeros_like(y)",
    "x = y.new_zeros(3)",
    "g = torch.Generator().manual_seed(0)",
    "y = x.cpu().numpy()",
    "y = x.detach().cpu().numpy()",
    "y = x.to('cpu').numpy()",
    "y = x.numpy(force=True)",
    "y = np.random.default_rng(0).standard_normal(3)",
])
def test_the_rules_let_device_clean_code_through(source):
    assert violations(source) == []


def test_the_cell_reader_drops_options_and_magics():
    text = ("```{code-cell} ipython3\n---\ntags: [hide-input]\n---\n%matplotlib inline\nx = torch.zeros(2)\n```\n"
            "text\n```{code-cell} ipython3\n:tags: [hide-cell]\n\ny = x.numpy()\n```\n")
    cells = chapter_cells(text)
    assert cells == ["x = torch.zeros(2)\n", "\ny = x.numpy()\n"]
    assert [v[1] for cell in cells for v in violations(cell)] == ["factory", "numpy"]


# --- the book and the library keep them --------------------------------------------------------------

@pytest.mark.parametrize("chapter", chapters(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_chapter_cells_keep_the_device_rules(chapter):
    found = file_violations(chapter)
    assert not found, "tensors that land on the CPU beside CUDA data on a GPU:\n" + "\n".join(found)


def test_library_keeps_the_device_rules():
    found = [v for path in modules() for v in file_violations(path)]
    assert not found, "tensors that land on the CPU beside CUDA data on a GPU:\n" + "\n".join(found)


def test_every_exception_names_a_real_place_and_a_reason():
    for (path, function), reason in EXCEPTIONS.items():
        assert (ROOT / path).is_file(), path
        assert function == "*" or re.search(rf"def {re.escape(function)}\b", (ROOT / path).read_text()), function
        assert len(reason) > 20, (path, function)


if __name__ == "__main__":
    targets = [Path(a) for a in sys.argv[1:]] or chapters() + modules()
    listed = [v for path in targets for p in ([path] if path.is_file() else
                                              sorted(path.rglob("*.py")) + sorted(path.rglob("*.md")))
              for v in file_violations(p)]
    print("\n".join(listed) or "no violations")
    print(f"{len(listed)} violation(s)", file=sys.stderr)
