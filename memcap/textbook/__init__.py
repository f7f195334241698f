"""The book's machinery: what turns the science into a textbook site, an edition for students and grades.

- :mod:`memcap.textbook.page`: what a chapter uses to show a result (refusals, tables, glued numbers, sentences
  and figures);
- :mod:`memcap.textbook.site` and :mod:`memcap.textbook.course`: the Sphinx extension the build loads
  (downloads, build status, the instructors' directives);
- :mod:`memcap.textbook.edition`: the student edition (solutions stripped) and the exercise index;
- :mod:`memcap.textbook.exercises`: the checkers behind ``check("ex-...", answer)`` (students import it as
  ``from memcap.exercises import check``, which stays the students' entry point);
- :mod:`memcap.textbook.grading`: ``python -m memcap grade``, with its sandboxed kernel
  (``_grading_kernel``) and the wire format of answers (``_grading_wire``).

The import rule (``tests/test_layout.py``): this package may import the science (``memcap``'s other
modules), never the other way round. ``site``, ``course`` and the ``glue_*`` helpers of ``page`` need the
``book`` extra (Sphinx, myst-nb); the exercises and the grader run on a plain install.
"""
