"""Numbers in a config file must be written as the type their field is: no bool, no float for int.

Pydantic's lax mode reads `num_tasks: true` as 1 and `num_tasks: 2.0` as 2, so a typo builds a
one-task dataset and exits 0. Strict mode for the whole config would also refuse YAML lists for
tuple fields and strings for enums, so the check is narrower: it walks the YAML mapping beside
the model (nested models, optionals, lists, tuples, dicts and discriminated unions of models)
and names every number field given a bool or, for an int, a float.
"""

from __future__ import annotations

import types
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel


def _options(annotation: Any) -> tuple[Any, ...]:
    """The alternatives of a union (`X | None`, `Union[...]`), else the annotation itself."""
    if get_origin(annotation) in (Union, types.UnionType):
        return tuple(a for a in get_args(annotation) if a is not type(None))
    return (annotation,)


def _kind_of_number(annotation: Any) -> type | None:
    options = _options(annotation)
    if any(o is bool or o is str or get_origin(o) is Literal for o in options):
        return None  # a bool or text is allowed there (`auto` | N fields validate themselves)
    if int in options:
        return int
    if float in options:
        return float
    return None


def _bad_number(expected: type, value: Any) -> str | None:
    if isinstance(value, bool):
        return f"a number ({expected.__name__}) is required, not the boolean {value}"
    if expected is int and isinstance(value, float):
        return f"a whole number is required, not {value!r}; write it without a decimal point"
    return None


def _matching_models(annotation: Any, value: dict) -> list[type[BaseModel]]:
    """The model classes of `annotation` that `value` could be (a discriminated union picks by
    its Literal field)."""
    models = [o for o in _options(annotation) if isinstance(o, type) and issubclass(o, BaseModel)]
    if len(models) <= 1:
        return models
    fitting = []
    for model in models:
        literals = {
            name: get_args(f.annotation)
            for name, f in model.model_fields.items()
            if get_origin(f.annotation) is Literal and name in value
        }
        if all(value[name] in allowed for name, allowed in literals.items()):
            fitting.append(model)
    return fitting[:1]


def number_type_errors(model: type[BaseModel], raw: dict, where: str = "") -> list[str]:
    """`field.path: message (fix)` for every number field of `raw` written as the wrong type."""
    errors = []
    for key, value in raw.items():
        field = model.model_fields.get(key) if isinstance(key, str) else None
        if field is None:
            continue  # unknown keys are pydantic's to report
        errors += _check(field.annotation, value, f"{where}{key}")
    return errors


def _check(annotation: Any, value: Any, path: str) -> list[str]:
    expected = _kind_of_number(annotation)
    if expected is not None:
        problem = _bad_number(expected, value)
        return [f"{path}: {problem}"] if problem else []
    if isinstance(value, dict):
        models = _matching_models(annotation, value)
        if models:
            return number_type_errors(models[0], value, f"{path}.")
        for option in _options(annotation):
            if get_origin(option) is dict and len(get_args(option)) == 2:
                inner = get_args(option)[1]
                return [e for k, v in value.items() for e in _check(inner, v, f"{path}.{k}")]
        return []
    if isinstance(value, list):
        for option in _options(annotation):
            if get_origin(option) in (list, tuple) and get_args(option):
                inner = get_args(option)[0]
                return [e for i, v in enumerate(value) for e in _check(inner, v, f"{path}.{i}")]
    return []
