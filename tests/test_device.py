import pytest
import torch

from memcap import device


def test_pick_device_defaults_to_an_available_device(monkeypatch):
    monkeypatch.delenv("MEMCAP_DEVICE", raising=False)
    dev = device.pick_device()
    expected = "cuda" if torch.cuda.is_available() else ("mps" if device._mps_available() else "cpu")
    assert dev.type == expected


def test_pick_device_honours_the_environment(monkeypatch):
    monkeypatch.setenv("MEMCAP_DEVICE", "cpu")
    assert device.pick_device() == torch.device("cpu")


def test_unknown_device_is_an_error():
    with pytest.raises(ValueError, match="device must be one of"):
        device.pick_device("tpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_unavailable_cuda_is_an_error_not_a_fallback():
    with pytest.raises(ValueError, match="CUDA is not available"):
        device.pick_device("cuda")


def test_dtype_policy():
    assert device.exact_dtype("cpu") == torch.float64 == device.EXACT_DTYPE
    assert device.train_dtype("cpu") == torch.float32


def test_describe_and_report_name_the_hardware():
    info = device.describe("cpu")
    assert info["device"] == "cpu" and info["torch"] == torch.__version__
    assert info["cpu_count"] >= 1
    line = device.report("cpu")
    assert line.startswith("Ran on cpu") and torch.__version__ in line


def test_one_device_has_one_canonical_form():
    """``cuda`` is the current CUDA device, ``cpu:0`` is the CPU: torch holds these names unequal."""
    assert torch.device("cpu:0") != torch.device("cpu")
    assert device.same_device("cpu:0", torch.device("cpu")) and device.same_device("cpu", "cpu:3")
    assert device.canonical_device("cpu:0") == torch.device("cpu")
    current = torch.cuda.current_device() if torch.cuda.is_available() else 0
    assert device.canonical_device("cuda") == torch.device("cuda", current)
    assert device.same_device("cuda", f"cuda:{current}") and not device.same_device("cuda:0", "cuda:1")
    assert not device.same_device("cuda", "cpu") and device.same_device("mps", "mps:0")


def test_canonical_device_refuses_what_is_not_a_device():
    with pytest.raises(TypeError, match="device must be a str or a torch.device, got int"):
        device.canonical_device(0)
    with pytest.raises(ValueError, match="device must name a device such as 'cuda'.*got 'gpu0'"):
        device.canonical_device("gpu0")
