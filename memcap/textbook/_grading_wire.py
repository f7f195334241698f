"""The grader's wire format: a student's answer as plain, validated JSON, and functions called from afar.

:mod:`memcap.textbook.grading` never believes a verdict computed in the student's kernel. It asks the kernel
for the *answer* (what the notebook last passed to ``check``), as JSON in the format below, decodes it
in its own process (refusing anything malformed) and runs the checker there. An answer that is a
function stays in the kernel: the grader receives a reference, and each time the checker calls it, the
grader sends the arguments (chosen by the checker) to the kernel, which calls the student's function
on them and sends back what it returned or raised, again as JSON that the grader validates. Whatever
the kernel sends is treated as the student's answer and nothing more: a kernel that lies can only
give a wrong answer, which the grader's checker judges.

Values the format carries (anything else arrives as an :class:`Unsupported` placeholder, which a
checker rejects as a wrong type): ``None``, bools, ints, floats (NaN and infinities included),
strings, fractions; lists, tuples, dicts (any keys of these kinds), sets; torch tensors and NumPy
arrays and scalars (dtype, shape and values); instances of the dataclasses and named tuples of
``memcap``'s models, data, constructions and experiments; SymPy expressions built from a fixed set of
node types; and functions (by reference). Each non-JSON value is an object ``{"$": kind, ...}``. A
reply is at most :data:`MAX_BYTES` of text, nested at most 64 levels, with at most four million
numbers.

Both ends use this module: the kernel imports it to :func:`export` answers and :func:`invoke`
functions (each publishes one output of kind :data:`MIME`); the grader reads them through
:class:`Answers`, which raises :class:`GradingStopped` (not an ``Exception``, so that a checker
expecting the student's function to refuse cannot take a silent kernel for a refusal) when no valid
reply comes.
"""
from __future__ import annotations

import dataclasses
import fractions
import importlib
import json
import math
from typing import Any, Callable

__all__ = ["MAX_BYTES", "MIME", "Answers", "GradingStopped", "NoAnswer", "RemoteError", "RemoteFunction",
           "Unsupported", "WireError", "decode", "encode", "encode_args", "export", "export_reply", "invoke",
           "invoke_reply", "read_reply"]

MIME = "application/x-memcap-answer"   # the only kind of output the grader reads from a kernel
MAX_BYTES = 32 * 2**20                 # largest reply the grader decodes
_MAX_DEPTH = 64
_MAX_ITEMS = 4_000_000                 # numbers in one reply, all tensors together
_DTYPES = ("float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8",
           "bool", "complex128", "complex64")
# the modules whose dataclasses and named tuples answers may hold (with memcap.construct.*,
# memcap.experiments.* and memcap.train*): the models, their data, the constructions and the experiments' records;
# building one of them has no effect beyond the object
_RECORD_MODULES = ("memcap.models", "memcap.linalg", "memcap.bounds", "memcap.certify", "memcap.data",
                   "memcap.fits")
_SYMPY_ATOMS = ("Pi", "Exp1", "ImaginaryUnit", "Infinity", "NegativeInfinity", "ComplexInfinity", "NaN",
                "EulerGamma", "Half", "One", "NegativeOne", "Zero")
_SYMPY_NODES = ("Add", "Mul", "Pow", "exp", "log", "sqrt", "Abs", "sin", "cos", "tan", "Max", "Min",
                "floor", "ceiling", "binomial", "factorial", "sign", "Sum", "Tuple")


class WireError(ValueError):
    """A reply that does not follow the format: the answer is treated as malformed."""


class Unsupported:
    """Stands for a value the format does not carry (its type's name is kept for the checker's message)."""

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<{self.type_name} (a value the grader cannot receive)>"


class RemoteError(Exception):
    """Base of the exceptions a student's function raised in its kernel (re-raised in the grader under
    the same class name, so that a checker sees ``ZeroDivisionError: ...`` as the student would)."""


# --- encoding (both ends) ------------------------------------------------------------------------

def _float(value: float) -> Any:
    return value if math.isfinite(value) else {"$": "float", "v": repr(value)}


def _array_fields(dtype: str, shape: tuple[int, ...], flat: list) -> dict:
    if dtype.startswith("complex"):
        flat = [[_float(z.real), _float(z.imag)] for z in flat]
    elif dtype.startswith(("float", "bfloat")):
        flat = [_float(float(x)) for x in flat]
    return {"dtype": dtype, "shape": list(shape), "data": flat}


def encode(value: Any, functions: list[Callable] | None = None, depth: int = 0) -> Any:
    """``value`` as JSON-ready data; callables are appended to ``functions`` and sent by index
    (without ``functions`` they arrive as :class:`Unsupported`)."""
    if depth > _MAX_DEPTH:
        raise WireError(f"the answer is nested more than {_MAX_DEPTH} levels deep")
    again = lambda v: encode(v, functions, depth + 1)  # noqa: E731
    kind = type(value).__module__.split(".")[0]
    if kind != "numpy":    # NumPy's float64 is a float, and keeps its type below
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, str):
            return str(value)
        if isinstance(value, int):
            return int(value) if abs(value) < 2**1000 else {"$": "unsupported", "type": "a very large int"}
        if isinstance(value, float):
            return _float(float(value))
        if isinstance(value, complex):
            return {"$": "complex", "v": [_float(value.real), _float(value.imag)]}
    if isinstance(value, fractions.Fraction):
        return {"$": "fraction", "p": again(value.numerator), "q": again(value.denominator)}
    if isinstance(value, RemoteFunction):
        return {"$": "function", "ref": value.ref, "name": value.__name__}
    if kind == "torch":
        import torch

        if isinstance(value, torch.Size):
            return {"$": "tuple", "items": [int(n) for n in value]}
        if isinstance(value, torch.Tensor):
            tensor = value.detach().cpu().resolve_conj().resolve_neg()
            dtype = str(tensor.dtype).removeprefix("torch.")
            if dtype not in _DTYPES or tensor.layout != torch.strided:
                return {"$": "unsupported", "type": f"tensor of {dtype}"}
            if dtype == "bfloat16":
                tensor = tensor.to(torch.float32)
            return {"$": "tensor", **_array_fields(dtype, tuple(tensor.shape), tensor.flatten().tolist())}
    if kind == "numpy":
        import numpy as np

        if isinstance(value, (np.ndarray, np.generic)) and value.dtype.name in _DTYPES:
            array = np.asarray(value)
            tag = "ndarray" if isinstance(value, np.ndarray) else "npscalar"
            return {"$": tag, **_array_fields(array.dtype.name, array.shape, array.ravel().tolist())}
    if kind == "sympy":
        return _encode_sympy(value, again)
    if isinstance(value, tuple) and hasattr(value, "_fields") and type(value).__module__.startswith("memcap"):
        return {"$": "record", "type": f"{type(value).__module__}.{type(value).__qualname__}",
                "fields": {name: again(getattr(value, name)) for name in value._fields}}
    if isinstance(value, list):
        return [again(v) for v in value]
    if isinstance(value, tuple):
        return {"$": "tuple", "items": [again(v) for v in value]}
    if isinstance(value, (set, frozenset)):
        return {"$": "set", "items": [again(v) for v in value]}
    if isinstance(value, dict):
        return {"$": "dict", "items": [[again(k), again(v)] for k, v in value.items()]}
    if dataclasses.is_dataclass(value) and not isinstance(value, type) and \
            type(value).__module__.startswith("memcap"):
        return {"$": "record", "type": f"{type(value).__module__}.{type(value).__qualname__}",
                "fields": {f.name: again(getattr(value, f.name)) for f in dataclasses.fields(value)
                           if f.init}}
    if callable(value) and functions is not None:
        functions.append(value)
        return {"$": "function", "ref": len(functions) - 1,
                "name": str(getattr(value, "__name__", "function"))[:80]}
    return {"$": "unsupported", "type": type(value).__qualname__[:80]}


def _encode_sympy(value: Any, again: Callable[[Any], Any]) -> Any:
    import sympy as sp

    name = type(value).__name__
    if isinstance(value, sp.Symbol):
        assumptions = {k: v for k, v in value.assumptions0.items() if isinstance(v, bool)}
        return {"$": "sympy", "node": "Symbol", "name": value.name, "assumptions": assumptions}
    if name in _SYMPY_ATOMS:
        return {"$": "sympy", "node": name}
    if isinstance(value, sp.Integer):
        return {"$": "sympy", "node": "Integer", "value": again(int(value))}
    if isinstance(value, sp.Rational):
        return {"$": "sympy", "node": "Rational", "p": again(int(value.p)), "q": again(int(value.q))}
    if isinstance(value, sp.Float):
        return {"$": "sympy", "node": "Float", "value": str(value), "precision": int(value._prec)}
    if name in _SYMPY_NODES and isinstance(value, sp.Basic):
        return {"$": "sympy", "node": name, "args": [again(a) for a in value.args]}
    return {"$": "unsupported", "type": f"SymPy {name}"}


def encode_args(args: tuple, named: dict[str, Any], functions: list[Callable] | None = None) -> str:
    """A call's arguments as JSON text: ``{"args": [...], "named": {...}}``."""
    return json.dumps({"args": [encode(a, functions) for a in args],
                       "named": {str(k): encode(v, functions) for k, v in named.items()}})


# --- decoding (both ends) ------------------------------------------------------------------------

class RemoteFunction:
    """A student's function that lives in the kernel: calling it asks the kernel to run it."""

    def __init__(self, ref: int, name: str, call: Callable[[int, tuple, dict], Any]) -> None:
        self.ref, self.__name__, self._call = ref, name, call

    def __call__(self, *args: Any, **named: Any) -> Any:
        return self._call(self.ref, args, named)

    def __repr__(self) -> str:
        return f"<function {self.__name__} (in the student's kernel)>"


class _Decoder:
    def __init__(self, resolve: Callable[[int, str], Any] | None) -> None:
        self.resolve, self.items = resolve, 0

    def count(self, n: int) -> None:
        self.items += n
        if self.items > _MAX_ITEMS:
            raise WireError(f"the answer holds more than {_MAX_ITEMS} numbers")

    def number(self, x: Any) -> Any:
        if isinstance(x, dict) and x.get("$") == "float" and x.get("v") in ("nan", "inf", "-inf"):
            return float(x["v"])
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise WireError(f"expected a number, got {type(x).__name__}")
        return x

    def array(self, obj: dict) -> tuple[str, list[int], list]:
        dtype, shape, data = obj.get("dtype"), obj.get("shape"), obj.get("data")
        if dtype not in _DTYPES:
            raise WireError(f"unknown dtype {str(dtype)[:40]!r}")
        if not isinstance(shape, list) or len(shape) > 32 or \
                not all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n for n in shape):
            raise WireError("an array's shape must be a list of sizes")
        size = math.prod(shape)
        if not isinstance(data, list) or len(data) != size:
            raise WireError("an array's data must list prod(shape) values")
        self.count(size)
        if dtype.startswith("complex"):
            values = []
            for z in data:
                if not (isinstance(z, list) and len(z) == 2):
                    raise WireError("a complex value must be a pair [real, imaginary]")
                values.append(complex(self.number(z[0]), self.number(z[1])))
        elif dtype == "bool":
            if not all(isinstance(x, bool) for x in data):
                raise WireError("a bool array must hold true/false values")
            values = data
        elif dtype.startswith(("int", "uint")):
            if not all(isinstance(x, int) and not isinstance(x, bool) and abs(x) < 2**64 for x in data):
                raise WireError("an integer array must hold integers")
            values = data
        else:
            values = [self.number(x) for x in data]
        return dtype, shape, values

    def __call__(self, obj: Any, depth: int = 0) -> Any:
        if depth > _MAX_DEPTH:
            raise WireError(f"the answer is nested more than {_MAX_DEPTH} levels deep")
        again = lambda v: self(v, depth + 1)  # noqa: E731
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, (int, float)):
            self.count(1)
            return obj
        if isinstance(obj, list):
            return [again(v) for v in obj]
        if not isinstance(obj, dict) or not isinstance(obj.get("$"), str):
            raise WireError(f"unexpected {type(obj).__name__} in the answer")
        kind = obj["$"]
        try:
            return getattr(self, "_" + kind)(obj, again) if kind in _KINDS else self._unknown(kind)
        except WireError:
            raise
        except Exception as err:   # a value that passed the checks above but that torch/sympy refuse
            raise WireError(f"a {kind} value could not be rebuilt: {type(err).__name__}: {str(err)[:200]}") \
                from None

    @staticmethod
    def _unknown(kind: str) -> Any:
        raise WireError(f"unknown kind of value {kind[:40]!r}")

    def _float(self, obj: dict, again: Callable) -> float:
        return self.number(obj)

    def _complex(self, obj: dict, again: Callable) -> complex:
        v = obj.get("v")
        if not (isinstance(v, list) and len(v) == 2):
            raise WireError("a complex value must be a pair [real, imaginary]")
        return complex(self.number(v[0]), self.number(v[1]))

    def _items(self, obj: dict) -> list:
        items = obj.get("items")
        if not isinstance(items, list):
            raise WireError(f"a {obj['$']} value needs a list of items")
        return items

    def _fraction(self, obj: dict, again: Callable) -> fractions.Fraction:
        return fractions.Fraction(_Decoder._int(obj.get("p")), _Decoder._int(obj.get("q")))

    def _tuple(self, obj: dict, again: Callable) -> tuple:
        return tuple(again(v) for v in self._items(obj))

    def _set(self, obj: dict, again: Callable) -> set:
        return {again(v) for v in self._items(obj)}

    def _dict(self, obj: dict, again: Callable) -> dict:
        pairs = self._items(obj)
        if not all(isinstance(p, list) and len(p) == 2 for p in pairs):
            raise WireError("a dict value needs [key, value] pairs")
        return {again(k): again(v) for k, v in pairs}

    def _unsupported(self, obj: dict, again: Callable) -> Unsupported:
        return Unsupported(str(obj.get("type", "value"))[:80])

    def _tensor(self, obj: dict, again: Callable) -> Any:
        import torch

        dtype, shape, values = self.array(obj)
        return torch.tensor(values, dtype=getattr(torch, dtype), device="cpu").reshape(shape)   # a decoded answer

    def _ndarray(self, obj: dict, again: Callable) -> Any:
        import numpy as np

        if obj.get("dtype") == "bfloat16":
            raise WireError("NumPy has no bfloat16")
        dtype, shape, values = self.array(obj)
        return np.array(values, dtype=dtype).reshape(shape)

    def _npscalar(self, obj: dict, again: Callable) -> Any:
        array = self._ndarray(obj, again)
        if array.shape != ():
            raise WireError("a NumPy scalar has shape ()")
        return array[()]

    def _record(self, obj: dict, again: Callable) -> Any:
        name, fields = obj.get("type"), obj.get("fields")
        if not isinstance(name, str) or not isinstance(fields, dict):
            raise WireError("a record must name its class and give its fields")
        module, _, attr = name.rpartition(".")
        if not (module in _RECORD_MODULES or module.startswith(("memcap.construct.", "memcap.experiments.",
                                                                 "memcap.train"))):
            raise WireError(f"a record must be of a memcap class that answers hold, not {name[:80]!r}")
        try:
            cls = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError):
            raise WireError(f"no class {name[:80]!r} in memcap") from None
        is_tuple = isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields")
        if not (is_tuple or dataclasses.is_dataclass(cls) and isinstance(cls, type)):
            raise WireError(f"{name[:80]!r} is not a memcap dataclass or named tuple")
        expected = set(cls._fields) if is_tuple else {f.name for f in dataclasses.fields(cls) if f.init}
        if set(fields) - expected:
            raise WireError(f"{attr} has no field {sorted(set(fields) - expected)[0][:40]!r}")
        return cls(**{k: again(v) for k, v in fields.items()})

    def _function(self, obj: dict, again: Callable) -> Any:
        ref, name = obj.get("ref"), obj.get("name", "function")
        if not isinstance(ref, int) or isinstance(ref, bool) or ref < 0 or not isinstance(name, str):
            raise WireError("a function must be sent as a reference number and a name")
        if self.resolve is None:
            return Unsupported("function")
        return self.resolve(ref, name[:80])

    def _sympy(self, obj: dict, again: Callable) -> Any:
        import sympy as sp

        node = obj.get("node")
        if node == "Symbol":
            name, assumptions = obj.get("name"), obj.get("assumptions", {})
            if not isinstance(name, str) or len(name) > 100 or not isinstance(assumptions, dict) or \
                    not all(isinstance(k, str) and isinstance(v, bool) for k, v in assumptions.items()):
                raise WireError("a SymPy symbol needs a name and true/false assumptions")
            return sp.Symbol(name, **assumptions)
        if node in _SYMPY_ATOMS:
            return getattr(sp.S, node)
        if node == "Integer":
            return sp.Integer(self._int(obj.get("value")))
        if node == "Rational":
            return sp.Rational(self._int(obj.get("p")), self._int(obj.get("q")))
        if node == "Float":
            value, precision = obj.get("value"), obj.get("precision")
            if not isinstance(value, str) or len(value) > 400 or not isinstance(precision, int) or \
                    not 1 <= precision <= 2000:
                raise WireError("a SymPy float needs its digits and a precision")
            return sp.Float(value, precision=precision)
        args = obj.get("args")
        if node not in _SYMPY_NODES or not isinstance(args, list):
            raise WireError(f"SymPy node {str(node)[:40]!r} is not accepted")
        return getattr(sp, node)(*(again(a) for a in args))

    @staticmethod
    def _int(value: Any) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or abs(value) >= 2**1000:
            raise WireError("expected a (not too large) integer")
        return value


_KINDS = {"float", "complex", "fraction", "tuple", "set", "dict", "unsupported", "tensor", "ndarray", "npscalar",
          "record", "function", "sympy"}


def decode(obj: Any, resolve: Callable[[int, str], Any] | None = None) -> Any:
    """Rebuild a value from :func:`encode`'s data, validating every piece; ``resolve(ref, name)`` turns a
    function reference into a callable. Raises :class:`WireError` on anything malformed."""
    return _Decoder(resolve)(obj)


def read_reply(text: Any) -> dict:
    """Parse one reply of the kernel: JSON text of at most :data:`MAX_BYTES`, an object. Raises
    :class:`WireError`."""
    if not isinstance(text, str):
        raise WireError(f"the reply is a {type(text).__name__}, not text")
    if len(text) > MAX_BYTES:
        raise WireError(f"the reply is larger than {MAX_BYTES} bytes")
    try:
        reply = json.loads(text)
    except (ValueError, RecursionError) as err:
        raise WireError(f"the reply is not JSON ({str(err)[:100]})") from None
    if not isinstance(reply, dict):
        raise WireError("the reply is not a JSON object")
    return reply


# --- the kernel's end ----------------------------------------------------------------------------

_FUNCTIONS: list[Callable] = []


def export_reply(label: str) -> dict:
    """(In the kernel.) The answer the notebook last passed to ``check(label, ...)``, as a reply."""
    from memcap.textbook.exercises import _SUBMITTED

    if label not in _SUBMITTED:
        return {"missing": True}
    answer, named = _SUBMITTED[label]
    try:
        return {"answer": json.loads(encode_args(answer, named, _FUNCTIONS))}
    except WireError as err:
        return {"malformed": str(err)}


def invoke_reply(ref: int, arguments: str) -> dict:
    """(In the kernel.) Call function ``ref`` of an exported answer on the arguments (JSON text from the
    grader); the reply holds what it returned or raised, and the arguments after the call (so that the
    grader sees changes made in place)."""
    request = read_reply(arguments)
    resolve = lambda r, name: _FUNCTIONS[r]  # noqa: E731
    args = decode(request.get("args", []), resolve)
    named = decode({"$": "dict", "items": [[k, v] for k, v in request.get("named", {}).items()]}, resolve)
    try:
        returned = _FUNCTIONS[ref](*args, **named)
    except Exception as err:  # the student's function failed: that is its answer
        reply: dict = {"raised": type(err).__name__[:80], "message": str(err)[:1000]}
    else:
        try:
            reply = {"returned": encode(returned, _FUNCTIONS)}
        except WireError as err:
            reply = {"malformed": str(err)}
    try:
        reply["after"] = json.loads(encode_args(tuple(args), named))
    except WireError:
        pass
    return reply


def _publish(reply: dict) -> None:
    from IPython.display import display

    display({MIME: json.dumps(reply)}, raw=True)


def export(label: str) -> None:
    """(In the kernel.) Publish :func:`export_reply` as an output of kind :data:`MIME`."""
    _publish(export_reply(label))


def invoke(ref: int, arguments: str) -> None:
    """(In the kernel.) Publish :func:`invoke_reply` as an output of kind :data:`MIME`."""
    _publish(invoke_reply(ref, arguments))


# --- the grader's end ----------------------------------------------------------------------------

class GradingStopped(BaseException):
    """The kernel could not answer (timed out, died, sent garbage): raised through the checker, which
    must not take it for an exception of the student's function, up to the grader."""


class NoAnswer(Exception):
    """The notebook never passed an answer to ``check`` for this exercise."""


def _exception_class(name: Any) -> type:
    name = name if isinstance(name, str) and name.isidentifier() else "Exception"
    return type(name, (RemoteError,), {"__module__": "builtins"})


def _write_back(original: Any, after: Any) -> None:
    """Apply to ``original`` (the grader's arguments) the in-place changes the kernel made to its copy."""
    kind = type(original).__module__.split(".")[0]
    if kind == "torch" and type(after) is type(original) and after.shape == original.shape and \
            after.dtype == original.dtype:
        import torch

        with torch.no_grad():
            original.copy_(after)
    elif kind == "numpy" and type(after) is type(original) and getattr(original, "flags", None) is not None \
            and original.flags.writeable and after.shape == original.shape and after.dtype == original.dtype:
        original[...] = after
    elif isinstance(original, list) and isinstance(after, list):
        if len(original) != len(after):
            original[:] = after
        for k, (a, b) in enumerate(zip(original, after)):
            if type(a) is type(b) and type(a).__module__.split(".")[0] in ("torch", "numpy"):
                _write_back(a, b)
            elif a is not b:
                original[k] = b
    elif isinstance(original, dict) and isinstance(after, dict):
        for key in list(original):
            if key not in after:
                del original[key]
        for key, value in after.items():
            if key in original:
                _write_back(original[key], value)
            else:
                original[key] = value
    elif dataclasses.is_dataclass(original) and type(after) is type(original):
        for f in dataclasses.fields(original):
            _write_back(getattr(original, f.name), getattr(after, f.name))
    elif isinstance(original, tuple) and isinstance(after, tuple) and len(original) == len(after):
        for a, b in zip(original, after):
            _write_back(a, b)


class Answers:
    """The grader's view of one kernel: ``ask(name, params)`` runs :func:`export` or :func:`invoke` there
    and returns the reply's text (raising :class:`GradingStopped` when none comes)."""

    def __init__(self, ask: Callable[[str, tuple], str]) -> None:
        self.ask = ask

    def _reply(self, name: str, params: tuple) -> dict:
        try:
            return read_reply(self.ask(name, params))
        except WireError as err:
            raise GradingStopped(f"the kernel sent a malformed reply: {err}") from None

    def answer(self, label: str) -> tuple[tuple, dict]:
        """The arguments and named arguments the notebook passed to ``check(label, ...)``, rebuilt here.
        Raises :class:`NoAnswer`, or :class:`WireError` for a malformed answer."""
        reply = self._reply("export", (label,))
        if reply.get("missing") is True:
            raise NoAnswer(label)
        if "malformed" in reply:
            raise WireError(str(reply["malformed"])[:300])
        answer = reply.get("answer")
        if not isinstance(answer, dict) or not isinstance(answer.get("args"), list) or \
                not isinstance(answer.get("named"), dict):
            raise WireError("the answer must hold a list of arguments and a dict of named ones")
        args = tuple(decode(answer["args"], self._function))
        named = {str(k): v for k, v in decode({"$": "dict", "items": [[k, v] for k, v in
                                                                   answer["named"].items()]},
                                                self._function).items()}
        return args, named

    def _function(self, ref: int, name: str) -> RemoteFunction:
        return RemoteFunction(ref, name, self.call)

    def call(self, ref: int, args: tuple, named: dict) -> Any:
        """Call the student's function ``ref`` in the kernel; return its result rebuilt here, or raise
        what it raised (as a :class:`RemoteError` of the same name)."""
        try:
            request = encode_args(args, named)
        except WireError as err:
            raise GradingStopped(f"the checker's arguments cannot be sent: {err}") from None
        reply = self._reply("invoke", (ref, request))
        after = reply.get("after")
        if isinstance(after, dict) and isinstance(after.get("args"), list):
            try:
                changed = decode(after["args"], self._function)
            except WireError:
                changed = []
            for original, new in zip(args, changed):
                _write_back(original, new)
        if "raised" in reply:
            raise _exception_class(reply["raised"])(str(reply.get("message", ""))[:1000])
        if "malformed" in reply:
            raise WireError(str(reply["malformed"])[:300])
        if "returned" not in reply:
            raise GradingStopped("the kernel's reply to a call holds no result")
        return decode(reply["returned"], self._function)
