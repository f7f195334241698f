"""The keys of a job (:func:`memcap.experiments.sweep.train_job`, :func:`~memcap.experiments.sweep.capacity_job`),
checked as a whole before :func:`~memcap.experiments.sweep.run_job` runs it.

A train job: ``kind`` 'train', ``specs`` (a non-empty list of spec dicts, :func:`memcap.train.spec_from_dict`),
``config`` (a :meth:`memcap.train.TrainConfig.to_dict`), optionally ``keep_params`` (a bool) and ``seed`` (an
int >= 0). A capacity job: ``kind`` 'capacity', ``specs``, ``candidates`` (a non-empty list of positive ints),
``config``, optionally ``rounds`` (an int >= 0), ``points`` (a positive int) and ``seed``. A missing, unknown or
mistyped key, at any depth, is refused naming it (``job['specs'][1]['heads']``).
"""
from __future__ import annotations

from memcap._checks import check_bool, nonnegative_int, positive_int
from memcap._schema import Key, list_of, tagged
from memcap.train.config import _config_record
from memcap.train.specs import _spec_record

_COMMON = {
    "specs": Key(list_of(_spec_record, "spec dicts (MHASpec.to_dict or AoTSpec.to_dict)", nonempty=True),
                 "the models to train, a non-empty list of spec dicts"),
    "config": Key(_config_record, "how to train them, a TrainConfig.to_dict"),
    "seed": Key(nonnegative_int, "the seed of torch's global generator, an int >= 0", needed=False),
}
_KINDS = {
    "train": ({**_COMMON, "keep_params": Key(check_bool, "whether to return the weights, a bool", needed=False)},
              "a train job"),
    "capacity": ({**_COMMON,
                  "candidates": Key(list_of(positive_int, "training-set sizes (positive ints)", nonempty=True),
                                    "the ladder of training-set sizes, a non-empty list of positive ints"),
                  "rounds": Key(nonnegative_int, "the bisection rounds, an int >= 0", needed=False),
                  "points": Key(positive_int, "the sizes tried per round, a positive int", needed=False)},
                 "a capacity job"),
}


def check_job(job: object, name: str = "job") -> dict:
    """``job`` if it is a train or capacity job whose every key is known and well typed (the module
    docstring lists them); otherwise ``TypeError`` or ``ValueError`` naming the key."""
    tagged(name, job, "kind", _KINDS)
    return job
