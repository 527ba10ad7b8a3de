"""A learned model of intent over sentences: the audit's second reader of prose, for requests in
words no rule has met.

The rules read a sentence by the kinds of words it joins (``intent``); each fresh set of hostile
skills brings words they have no kind for. This model reads a sentence by its meaning instead: a
sentence embedding from the bundled MiniLM model, scored by one linear model per intent
(exfiltration, concealment, override, disclosure). The weights (``intent_weights.json``) were
fitted on the project's own hostile fixtures (the sentences that carry each attack) against its
benign look-alikes and sentences of real skills as background (``bench/audit_intent.py`` fits
them again); no text of anyone else's is shipped.

Only candidate sentences are embedded: a sentence outside code that holds the words an intent
needs (a secret and a place to send it; someone kept in the dark and a way of keeping them there;
instructions and a word that sets them aside; the agent's instructions or environment and a way
of showing them), at most :data:`MAX_SENTENCES` a file. A sentence scored at :attr:`Weights.high`
or above is high, at :attr:`Weights.medium` medium (high when what it puts at stake is grave by the
rules' own concepts: a secret file and an outside address), then graded by the file's context as a rule's phrase is (quoted, taught, negated: low; hidden:
high).

The model needs the embedder its weights were fitted for (:attr:`Weights.model`): with another
embedder, or none (``embedder = "none"``), it is off and the rules decide alone. Scores are a
dot product over the embedding: the same text gives the same score, and each text is embedded
once per process (:attr:`SentenceModel.cache`)."""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import intent
from .rules import RULES, visible

Scan = Any          # skillshelf.supply.scan.Scan (importing it here would make a circle)

KINDS = ("exfiltration", "concealment", "override", "disclosure")
RULE_OF = {"exfiltration": "exfil.request", "concealment": "override.conceal",
           "override": "override.instructions", "disclosure": "override.disclose"}
MAX_SENTENCES = 256         # candidate sentences scored in one file (the first ones)
MAX_SENTENCE_BYTES = 600    # a longer sentence is read in its first part
CACHE_SIZE = 50_000         # texts whose scores are kept in one process
WEIGHTS_FILE = Path(__file__).with_name("intent_weights.json")
log = logging.getLogger("skillshelf.audit")

_WORD_BYTES = bytes(c if (48 <= c <= 57 or 97 <= c <= 122) else 32 for c in range(256))


def _w(s: bytes) -> frozenset[bytes]:
    return frozenset(s.split())


# --- the gate: which sentences are candidates, and for which intents ------------------------------
SECRET = _w(b"credential credentials key keys token tokens secret secrets password passwords passwd env environment "
            b"ssh aws kube kubeconfig netrc npmrc pypirc gnupg gpg id_rsa id_ed25519 id_ecdsa cookies cookie history "
            b"bash_history zsh_history gcloud keychain wallet dotfiles shadow mnemonic pem")
# somewhere outside to send to: a URL, an address or handle, a host variable, a place named by its kind
PLACE = re.compile(rb"://|(?<![\w.])@[\w-]|[\w.+-]@[\w-]{1,63}\.[a-z0-9]|\$\{?[a-z_]{0,30}(?:url|uri|host|hook|endpoint|"
                   rb"server)|\b(?:webhooks?|collector|form|ticket|e-?mail|mail|dm|channel|gist|bucket|pastebin|hastebin|"
                   rb"discord|telegram|ngrok|requestbin|pipedream|transfer\.sh|webhook\.site)\b")
WHO = _w(b"user users human humans person people developer developers maintainer maintainers reviewer reviewers owner "
         b"owners operator operators anyone anybody nobody summary summarise summarize summarising summarizing reply "
         b"explanation transcript changelog narrate announce them")
# a word of keeping back or of not knowing, with someone to keep it from
KEEP = _w(b"hide hiding hidden conceal omit omitting leave keep pretend claim unaware dark secret confidential informed "
          b"describe routine normal regardless silently quietly mention know knows learn hear notice aware find finds "
          b"see tell say")
# a negated telling: "do not mention", "never tell", "don't bring it up"
NEG_TELL = re.compile(rb"\b(?:not|never|no|nothing|don't|dont|don\xe2\x80\x99t|without)\s+(?:[\w',]+\s+){0,3}?"
                      rb"(?:mention|say|tell|list|report|narrate|announce|confirm|reveal|disclose|bring|inform|surface|"
                      rb"show)\w{0,3}\b")
SLY = _w(b"pretend regardless silently quietly secretly covertly stealthily")
BETWEEN_US = re.compile(rb"\bbetween\s+(?:us|ourselves|you\s+and\s+me)\b|\b(?:no|any|leave\s+no)\s+(?:record|trace)s?\b")
DIRECTIVE = _w(b"instructions instruction prompt rules guidance guidelines directives directions")
ASIDE = _w(b"obey follow answer act approve ignore disregard forget override aside revoked void only longer previous "
           b"prior earlier above new now system unrestricted developer mode")
PRIVATE = _w(b"prompt instructions environment variables env secrets configuration")
SHOW = _w(b"print output reveal show repeat display dump echo reply answer verbatim disclose include")


def gate(sent: bytes) -> tuple[str, ...]:
    """The intents a lower-cased sentence holds the words for (none: it is not embedded)."""
    w = frozenset(sent.translate(_WORD_BYTES).split())
    kinds = []
    if w & SECRET and PLACE.search(sent):
        kinds.append("exfiltration")
    if (w & WHO and w & KEEP) or w & SLY or NEG_TELL.search(sent) or BETWEEN_US.search(sent):
        kinds.append("concealment")
    if w & DIRECTIVE and w & ASIDE:
        kinds.append("override")
    if w & PRIVATE and w & SHOW:
        kinds.append("disclosure")
    return tuple(kinds)


_FENCE = re.compile(rb"(?m)^[ \t]{0,3}(?:```|~~~)")
_BREAK = re.compile(rb"[.!?;](?=[\s\"')\]]|$)|\n[ \t]*\n|\n(?=[ \t]{0,8}(?:[-*+#|>]|\d{1,3}[.)]\s))|\]\(|"
                    rb"(?m:^[ \t]{0,3}#{1,6}[ \t][^\n]{0,300}\n)")     # a heading is a sentence of its own


def candidates(data: bytes, kind: str = "markdown", cap: int = MAX_SENTENCES) -> list[tuple[int, int, tuple[str, ...]]]:
    """(start, end, intents) of the sentences of a file worth embedding, in order, at most ``cap``.
    Code blocks are left to the command rules; each line of the frontmatter is a sentence."""
    low = data.lower()
    if kind != "markdown" or not gate(low):
        return []         # no sentence can hold what no intent's words are in the file
    cuts: list[int] = [0]
    fm_end = -1
    if low.startswith(b"---"):
        fm_end = low.find(b"\n---", 3, 200_000)
        if fm_end > 0:
            i = low.find(b"\n")
            while 0 <= i < fm_end:
                cuts.append(i + 1)
                i = low.find(b"\n", i + 1)
            cuts.append(fm_end + 1)
    marks = [m.start() for m in _FENCE.finditer(low)]
    fences = [(marks[i], marks[i + 1]) for i in range(0, len(marks) - 1, 2)]
    for s, e in fences:
        cuts += [s, low.find(b"\n", e) + 1 or len(low)]
    cuts += [m.end() for m in _BREAK.finditer(low, max(fm_end, 0))]
    cuts = sorted({c for c in cuts if 0 <= c <= len(low)}) + [len(low)]
    out: list[tuple[int, int, tuple[str, ...]]] = []
    f = 0
    for a, b in itertools.pairwise(cuts):
        while f < len(fences) and fences[f][1] <= a:
            f += 1
        if f < len(fences) and fences[f][0] <= a < fences[f][1]:
            continue
        b = min(b, a + MAX_SENTENCE_BYTES)
        sent = low[a:b]
        if len(sent.strip()) < 12:
            continue
        kinds = gate(sent)
        if kinds:
            out.append((a, b, kinds))
            if len(out) >= cap:
                break
    return out


def sentence_text(data: bytes, a: int, b: int) -> str:
    """What is embedded: the sentence on one line, Markdown's marks and extra spaces left out."""
    text = data[a:b].decode("utf-8", "replace")
    text = re.sub(r"[`*_>#|]+", " ", text)
    return " ".join(text.split())[:MAX_SENTENCE_BYTES]


# --- the weights and the model ---------------------------------------------------------------------
@dataclass(frozen=True)
class Weights:
    """One linear model per intent over the embedding: ``p = sigmoid(w · x + b)``."""

    model: str                  # the embedder's model id these weights were fitted for (its prefix)
    kinds: tuple[str, ...]
    w: np.ndarray               # (len(kinds), dimensions), float32
    b: np.ndarray               # (len(kinds),)
    high: float
    medium: float

    @functools.cached_property
    def digest(self) -> str:
        h = hashlib.sha256(self.model.encode())
        h.update(np.ascontiguousarray(self.w, dtype=np.float32).tobytes())
        h.update(np.ascontiguousarray(self.b, dtype=np.float32).tobytes())
        h.update(f"{self.high:.4f}:{self.medium:.4f}".encode())
        return h.hexdigest()[:12]

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model, "kinds": list(self.kinds), "high": self.high, "medium": self.medium,
                "w": [[round(float(v), 6) for v in row] for row in self.w], "b": [round(float(v), 6) for v in self.b]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Weights:
        return cls(str(d["model"]), tuple(d["kinds"]), np.asarray(d["w"], dtype=np.float32),
                   np.asarray(d["b"], dtype=np.float32), float(d["high"]), float(d["medium"]))


def load_weights(path: Path = WEIGHTS_FILE) -> Weights | None:
    try:
        return Weights.from_dict(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        return None


class SentenceModel:
    """Scores sentences with ``weights`` over the vectors of ``embedder`` (a callable that returns the
    embedder, or None, at first use: the library's ``model.state``). Off when there is no embedder,
    or it is not the one the weights were fitted for."""

    def __init__(self, embedder: Callable[[], Any] | Any, weights: Weights | None = None):
        # the library's embedder (``LazyEmbedder``): ``state`` loads it, ``unloaded`` names it without
        # loading; a plain callable (tests, benches) returns the embedder, loaded
        self._embedder = embedder.state if hasattr(embedder, "state") else embedder
        self._peek: Callable[[], Any] | None = getattr(embedder, "unloaded", None)
        self.weights = weights if weights is not None else load_weights()
        self.cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()     # audits may run in several threads (a sync, a watcher)
        self.reason: str | None = None
        self.failures = 0

    def _model(self) -> Any:
        if self.weights is None:
            self.reason = "no weights for the model of intent"
            return None
        got = self._embedder()
        emb = got[0] if isinstance(got, tuple) else got
        if emb is None:
            self.reason = "no embedder (embedder = none): the rules alone read prose"
            return None
        if not str(getattr(emb, "model_id", "")).startswith(self.weights.model):
            self.reason = (f"the embedder is {getattr(emb, 'model_id', '?')}, the model of intent was fitted for "
                           f"{self.weights.model}: the rules alone read prose")
            return None
        self.reason = None
        return emb

    def enabled(self) -> bool:
        return self._model() is not None

    def label(self) -> str:
        """What findings depend on (kept with each audit): the weights, when the model is on. Known
        without loading the embedder when it can be named unloaded: the model is loaded only when a
        sentence needs a score, so a sync whose changed skills hold no sentence the model reads
        loads nothing (an embedder that then fails to load turns the label off, and an audit is
        kept with the label of after its reading: ``Auditor.audit_skill``)."""
        if self.weights is None:
            return ""
        if self._peek is not None:
            emb = self._peek()      # None when the backend cannot be made: the rules alone
            on = emb is not None and str(getattr(emb, "model_id", "")).startswith(self.weights.model)
        else:
            on = self.enabled()
        return f"intent-{self.weights.digest}" if on else ""

    def score(self, texts: list[str]) -> np.ndarray:
        """(len(texts), len(kinds)) probabilities; zeros when the model is off or fails."""
        w = self.weights
        out = np.zeros((len(texts), len(w.kinds) if w else 0), dtype=np.float32)
        emb = self._model()
        if emb is None or not texts:
            return out
        with self._lock:
            todo = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if todo:
            try:
                vecs = np.asarray(emb.embed_batch(todo), dtype=np.float32)
            except Exception:       # the rules' audit stands alone whatever the embedder does
                log.warning("the audit's model of intent could not embed %d sentences", len(todo), exc_info=True)
                self.failures += 1
                return out
            assert w is not None
            probs = 1.0 / (1.0 + np.exp(-(vecs @ w.w.T + w.b)))
            with self._lock:
                for t, p in zip(todo, probs):
                    self.cache[t] = p.astype(np.float32)
                    if len(self.cache) > CACHE_SIZE:
                        self.cache.popitem(last=False)
        with self._lock:
            for i, t in enumerate(texts):
                got = self.cache.get(t)
                if got is not None:
                    out[i] = got
        return out


def at_stake(kind: str, sent: bytes) -> bool:
    """Whether what a request the model found puts at stake is grave, by the rules' own concepts
    (``intent``): for exfiltration, a secret named by its file or path and an outside address that is
    not a reference. (A step of the agent's in a sentence the model reads as concealment is not enough:
    on real skills it raised "stop and ask the user" and "don't just report that it was created".)"""
    if kind == "exfiltration":
        return any(_secret_file(sent, m) for m in intent.SECRET.finditer(sent)) \
            and any(_outside(sent, d) for d in _DEST.finditer(sent))
    return False


_FILE_LIKE = re.compile(rb"[~$]|\.[a-z]|\w{1,20}/")
# where something is put ("set the keys in .env"), not what is sent
_PUT = re.compile(rb"\b(?:in|into|to|onto|inside|under|within)\s+(?:the\s+|your\s+|a\s+|an\s+|my\s+|our\s+)?$")


# the rules' destinations, and any other URL scheme (gs://, s3://, az://)
_DEST = re.compile(intent.DEST.pattern + rb"|\b[a-z][a-z0-9+.-]{1,10}://[^\s\"'`()<>|\\]{3,200}")


def _secret_file(sent: bytes, m: re.Match) -> bool:
    """A secret named by its file or path (~/.kube/config, .env, $HOME/.ssh, ~/.config/gcloud/credentials.db),
    not a public key, not where something is put and not what is taken out first."""
    s = sent.rfind(b" ", 0, m.start()) + 1           # the whole path the secret's word is part of
    e = sent.find(b" ", m.end())
    g = sent[s:len(sent) if e < 0 else e].strip(b"`'\"(")
    return bool(_FILE_LIKE.match(g)) and not g.rstrip(b".,;:)'\"`").endswith(b".pub") \
        and not _PUT.search(sent, max(0, s - 30), s) and not intent.REMOVED.search(sent, max(0, s - 60), s)


def _sent_thing(sent: bytes, m: re.Match) -> bool:
    """A secret the sentence could send: not where something is put, not what is taken out first."""
    s = m.start()
    return not _PUT.search(sent, max(0, s - 30), s) and not intent.REMOVED.search(sent, max(0, s - 60), s)


def _outside(sent: bytes, d: re.Match) -> bool:
    """A destination that is not this machine, a reference ("as described at …") or a source ("from …")."""
    s = d.start()
    return not (intent.LOCAL.match(d.group()) or intent.REFERENCE_BEFORE.search(sent, max(0, s - 40), s)
                or intent.SOURCE_BEFORE.search(sent, max(0, s - 40), s))


def check(scan: Scan, model: SentenceModel) -> None:
    """Score the candidate sentences of a Markdown file and report what the rules did not."""
    if scan.kind != "markdown" or model.weights is None:
        return
    found = candidates(scan.data, scan.kind, cap=MAX_SENTENCES + 1)
    if len(found) > MAX_SENTENCES:
        found = found[:MAX_SENTENCES]
        scan.add("files.not-audited", "medium", found[-1][1], f"more than {MAX_SENTENCES} sentences for the model of "
                 "intent to read: the rest of the file was read by the rules alone")
    found = [(a, b, kinds) for a, b, kinds in found
             if any((RULE_OF[k], scan.line_of(a + len(scan.data[a:b]) - len(scan.data[a:b].lstrip()))) not in scan._seen
                    for k in kinds)]       # what a rule read already is not embedded
    if not found:
        return
    texts = [sentence_text(scan.data, a, b) for a, b, _ in found]
    probs = model.score(texts)
    if probs.size == 0:
        return
    w = model.weights
    for (a, b, kinds), text, p in zip(found, texts, probs):
        # the intent the sentence holds the words for that the model finds likeliest
        best, kind = max((float(p[w.kinds.index(k)]), k) for k in kinds if k in w.kinds) if kinds else (0.0, "")
        if best < w.medium:
            continue
        if kind == "exfiltration" and not any(_sent_thing(scan.low[a:b], m) for m in intent.SECRET.finditer(scan.low[a:b])):
            continue          # every secret named is where something is put ("add the server to your environment")
        at = a + (len(scan.data[a:b]) - len(scan.data[a:b].lstrip()))
        rule = RULE_OF[kind]
        line = scan.line_of(at)
        if (rule, line) in scan._seen:
            continue          # a rule read it already
        sev, note = scan.grade_phrase(rule, at)
        if sev != "low" and not scan.hidden_at(at):
            sev = "high" if best >= w.high or at_stake(kind, scan.low[a:b]) else "medium"
        scan.add(rule, sev, at, f"{RULES[rule].title}: {visible(text, 120)!r} (read by the model of intent, "
                 f"{kind} {best:.2f}){note}")
