"""seqvend ids for Django models: one client per process (fork-safe, so gunicorn's and
celery's prefork workers are fine), and a field that takes its value at the first save."""

from __future__ import annotations

import functools

import seqvend
from django.conf import settings
from django.db import models


@functools.lru_cache(maxsize=None)
def client() -> seqvend.Client:
    """The process's client, made on first use from settings.SEQVEND_URL / SEQVEND_TOKEN."""
    return seqvend.Client(settings.SEQVEND_URL, settings.SEQVEND_TOKEN)


class SequenceField(models.BigIntegerField):
    """A bigint filled from a seqvend sequence when a row is first saved (from the local
    cache: no round trip per row). Values are unique; an aborted transaction leaves a gap."""

    def __init__(self, *args, sequence: str, **kwargs):
        self.sequence = sequence
        kwargs.setdefault("editable", False)
        kwargs.setdefault("unique", True)
        super().__init__(*args, **kwargs)

    def deconstruct(self):
        name, path, args, kwargs = super().deconstruct()
        kwargs["sequence"] = self.sequence
        return name, path, args, kwargs

    def pre_save(self, instance, add):
        value = getattr(instance, self.attname)
        if add and value is None:
            value = client().next(self.sequence)
            setattr(instance, self.attname, value)
        return value
