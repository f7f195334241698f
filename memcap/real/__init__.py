"""The real-model code: small real transformers and real data, measured against Mahdavi et al.'s assumptions.

- :mod:`memcap.real.data`: offline real data (scikit-learn's digits, English text shipped with Python);
- :mod:`memcap.real.transformer`: the pieces of a standard transformer block, with a skip connection;
- :mod:`memcap.real.vit` and :mod:`memcap.real.textmodels`: a tiny ViT, a tiny GPT-like model, BERT/MiniLM;
- :mod:`memcap.real.assumptions`: the papers' assumptions measured on those models (Mahdavi et al.'s
  Tables 1 and 3).

The import rule (``tests/test_layout.py``): this package uses the library's core (``_checks``, ``linalg``,
``profiles``...), never the experiments (``memcap.experiments``) nor the book's machinery (``memcap.textbook``).
"""
