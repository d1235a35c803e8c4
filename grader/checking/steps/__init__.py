"""The steps of `check` (grader.checking.check holds their order and the loop).

Each step is a function `step(sub) -> list[Item]`: it reads the submission's context
(`context.Submission`: exercise, source, backend, arch, launch, options, the verdict being built,
what earlier steps compiled and ran), may note what later steps need on it, and returns its
items in verdict order. A step that returns `Stop(items)` ends the pipeline after its items
(a compile error, a wrong signature: nothing after it could say more).
"""
