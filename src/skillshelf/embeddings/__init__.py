"""Embedding backends: a small contract and a registry by name.

Nothing is imported or loaded until :func:`create` is called, and a backend loads its
model on first use (``load()`` or the first ``embed_batch``).

May use: the core values only (``errors``, ``text``); no service part."""

from __future__ import annotations

from .base import Embedder, available, create, register

__all__ = ["Embedder", "available", "create", "register"]
