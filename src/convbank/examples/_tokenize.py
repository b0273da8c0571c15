"""The :class:`Encoder` of :meth:`~convbank.examples.Examples.tokenize`: examples with token
ids, made by any tokenizer.

What is tokenised: an example with ``messages`` (the ``responses`` and ``chat`` views) is a
chat: rendered with the tokenizer's chat template where it has one, and ``labels`` hold the
tokens of the messages a model learns to write (``train_on="response"``: the response of a
``responses`` example, every ``assistant`` message of a ``chat`` one; ``"all"``: every token)
with -100 on the rest, as language-model training wants it. Any other example tokenises its
``text``. Histories are cut from the left when ``max_length`` is reached (the response is
kept), texts from the right (as the tokenizer's own truncation: the special tokens a Hugging
Face tokenizer adds are kept).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from convbank._arguments import a_flag_or_none
from convbank._textio import content_json
from convbank._wording import article, counted
from convbank.errors import ConvbankError, whole_number
from convbank.examples._rows import Example

__all__ = ["IGNORE_INDEX", "Encoder", "TokenizerError"]

IGNORE_INDEX = -100
"""The label of a token no loss is computed on (PyTorch's ``CrossEntropyLoss`` default)."""


class TokenizerError(ConvbankError, ValueError):
    """A tokenizer that cannot do what the view needs (no chat template for a chat)."""


class Encoder:
    """What turns examples into token ids (see the module doc and
    :class:`~convbank.examples.Tokenized`)."""

    def __init__(
        self,
        tokenizer: Any,
        *,
        max_length: int | None = None,
        truncation_side: str | None = None,
        template: bool | None = None,
        train_on: str = "response",
    ) -> None:
        if truncation_side not in (None, "left", "right"):
            raise ValueError(f"truncation_side is 'left' or 'right', not {truncation_side!r}")
        if train_on not in ("response", "all"):
            raise ValueError(f"train_on is 'response' or 'all', not {train_on!r}")
        self.tokenizer = tokenizer
        self.max_length = None if max_length is None else whole_number(max_length, "max_length", least=1)
        self.truncation_side = truncation_side
        self.template = a_flag_or_none(template, "template")
        self.train_on = train_on
        if template and not _has_template(tokenizer):
            raise TokenizerError(_no_template(tokenizer))
        self._direct: Any = None  # the compiled template, once checked against the tokenizer's

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_direct": None}  # a compiled template does not pickle

    def settings(self) -> tuple[Any, ...]:
        """What, besides the tokenizer, decides the ids (for the view's key)."""
        return (self.max_length, self.truncation_side, self.template, self.train_on)

    def encode_rows(self, rows: list[Example]) -> list[Example]:
        """These examples with their token ids (new dicts)."""
        chats = [i for i, r in enumerate(rows) if "messages" in r]
        texts = [i for i, r in enumerate(rows) if "messages" not in r]
        if texts:
            if any("text" not in rows[i] for i in texts):
                raise TokenizerError("tokenize() needs examples with 'text' or 'messages'")
            for i, cut in zip(texts, self._encode_texts([rows[i]["text"] for i in texts]), strict=True):
                rows[i] = {**rows[i], "input_ids": cut, "attention_mask": [1] * len(cut)}
        if chats:
            pieces = self._pieces([rows[i] for i in chats])
            flat = [text for made in pieces for text, _ in made]
            encoded = iter(self._encode(flat, special=False) if flat else [])
            for i, parts in zip(chats, pieces, strict=True):
                ids: list[int] = []
                labels: list[int] = []
                for _, learn in parts:
                    piece = next(encoded)
                    ids += piece
                    labels += piece if learn else [IGNORE_INDEX] * len(piece)
                side = self.truncation_side or "left"
                ids, labels = self._cut(ids, side), self._cut(labels, side)
                rows[i] = {**rows[i], "input_ids": ids, "attention_mask": [1] * len(ids), "labels": labels}
        return rows

    # ------------------------------------------------------------------ tokens
    def _encode(self, texts: list[str], *, special: bool = True) -> list[list[int]]:
        tok = self.tokenizer
        if _is_hf(tok):
            return _lists(tok(texts, add_special_tokens=special), "input_ids", texts)
        made = []
        for text in texts:
            ids = tok(text)
            wrong = _not_ids(ids)
            if wrong is not None:
                raise TokenizerError(
                    f"the tokenizer returned {wrong} for a text; a callable tokenizer must return a "
                    "list of token ids (a Hugging Face tokenizer object is used as one)"
                )
            made.append([int(i) for i in ids])
        return made

    def _encode_texts(self, texts: list[str]) -> list[list[int]]:
        """Texts' ids cut to ``max_length`` as the tokenizer's own truncation cuts them: the
        special tokens a Hugging Face tokenizer adds (BERT's ``[CLS]`` and ``[SEP]``) are
        kept, the text's tokens cut on the truncation side."""
        side = self.truncation_side or "right"
        tok = self.tokenizer
        if self.max_length is None or not _is_hf(tok):
            return [self._cut(ids, side) for ids in self._encode(texts)]
        made = tok(texts, add_special_tokens=True, return_special_tokens_mask=True)
        out = []
        masks = _lists(made, "special_tokens_mask", texts, _lists(made, "input_ids", texts))
        for ids, special in zip(made["input_ids"], masks, strict=True):
            over = len(ids) - self.max_length
            if over > 0:
                text = [k for k, flag in enumerate(special) if not flag]
                if over > len(text):
                    raise TokenizerError(
                        f"max_length {self.max_length} leaves no room for a text beside the "
                        f"tokenizer's {len(ids) - len(text)} special tokens"
                    )
                gone = set(text[len(text) - over :] if side == "right" else text[:over])
                out.append([t for k, t in enumerate(ids) if k not in gone])
            else:
                out.append(list(ids))
        return out

    def _cut(self, ids: list[int], side: str) -> list[int]:
        if self.max_length is None or len(ids) <= self.max_length:
            return ids
        return ids[-self.max_length :] if side == "left" else ids[: self.max_length]

    def _pieces(self, rows: list[Example]) -> list[list[tuple[str, bool]]]:
        """Each chat cut into texts, each marked trained or not: a chat is cut where each
        trained message's rendering starts and ends (the growth of the rendered prefix), so
        the token ids, the concatenation of the pieces' tokens, have labels on exactly the
        trained messages' tokens (a template's header of a trained message is context). The
        renderings of all the chats are asked for together (one call to the template for the
        prompts, one for the rest)."""
        use_template = self.template if self.template is not None else _has_template(self.tokenizer)
        if self.train_on == "all":
            texts = self._render([r["messages"] for r in rows], use_template, prompt=False)
            return [[(text, True)] for text in texts]
        plans = []
        for row in rows:
            messages = row["messages"]
            trained = sorted(_trained(messages, row))
            ends = [
                *(k + 1 for k in trained),
                *([] if trained and trained[-1] == len(messages) - 1 else [len(messages)]),
            ]
            plans.append((messages, trained, ends))
        prompts = iter(
            self._render([m[:k] for m, trained, _ in plans for k in trained], use_template, prompt=True)
        )
        wholes = iter(self._render([m[:e] for m, _, ends in plans for e in ends], use_template, prompt=False))
        out = []
        for _, trained, ends in plans:
            pieces: list[tuple[str, bool]] = []
            done = ""
            for _ in trained:
                before, whole = next(prompts), next(wholes)
                if not (before.startswith(done) and whole.startswith(before)):
                    raise TokenizerError(_rewrites)
                pieces += [(before[len(done) :], False), (whole[len(before) :], True)]
                done = whole
            if len(ends) > len(trained):  # the messages after the last trained one
                whole = next(wholes)
                if not whole.startswith(done):
                    raise TokenizerError(_rewrites)
                pieces.append((whole[len(done) :], False))
            out.append([(text, learn) for text, learn in pieces if text])
        return out

    def _render(self, chats: list[list[dict[str, Any]]], use_template: bool, *, prompt: bool) -> list[str]:
        """Chats as text: the tokenizer's chat template (all in one call) or ``role: content``
        lines; an empty chat without a generation prompt is the empty text."""
        if not chats:
            return []
        if use_template:
            asked = [i for i, m in enumerate(chats) if m or prompt]
            texts = [""] * len(chats)
            if asked:
                direct = self._direct_renderer(chats[asked[0]], prompt)
                if direct is not None:
                    made = [direct(chats[i], prompt) for i in asked]
                else:
                    made = self.tokenizer.apply_chat_template(
                        [chats[i] for i in asked], tokenize=False, add_generation_prompt=prompt
                    )
                for i, text in zip(asked, made, strict=True):
                    texts[i] = text
            return texts
        header = "assistant: " if prompt else ""
        lines = (
            "".join(f"{m['role']}: {content_json(m.get('content'))}\n" for m in messages)
            for messages in chats
        )
        return [text + header for text in lines]

    def _direct_renderer(self, sample: list[dict[str, Any]], prompt: bool) -> Any:
        """The tokenizer's compiled chat template, rendered directly (``apply_chat_template``
        re-copies and checks every message each call, half its time): only where it gives
        what ``apply_chat_template`` gives, checked on a chat once per encoder (None:
        ``apply_chat_template`` is used)."""
        if self._direct is None:
            self._direct = False
            compiled = _compiled(self.tokenizer)
            if compiled is not None:
                values = dict(getattr(self.tokenizer, "special_tokens_map", None) or {})

                def render(messages: list[dict[str, Any]], prompt: bool) -> str:
                    text: str = compiled.render(
                        messages=messages, tools=None, documents=None, add_generation_prompt=prompt, **values
                    )
                    return text

                same = all(
                    render(sample, p)
                    == self.tokenizer.apply_chat_template(sample, tokenize=False, add_generation_prompt=p)
                    for p in (prompt, not prompt)
                )
                self._direct = render if same else False
        return self._direct or None


def _compiled(tokenizer: Any) -> Any:
    """The Jinja template Hugging Face compiles from the tokenizer's chat template (its sandbox,
    extensions and filters), or None where it cannot be had."""
    template = getattr(tokenizer, "chat_template", None)
    if not isinstance(template, str):
        return None
    try:
        from transformers.utils.chat_template_utils import _compile_jinja_template

        return _compile_jinja_template(template)
    except Exception:  # another transformers: apply_chat_template it is
        return None


_rewrites = (
    "the chat template renders a conversation's start differently once more messages follow, "
    "so the response's tokens cannot be told apart; pass template=False"
)


def _trained(messages: list[dict[str, Any]], row: Example) -> set[int]:
    """The messages whose tokens are labels: the response (a ``responses`` example: the last
    message) or every assistant message."""
    if "response" in row:
        return {len(messages) - 1}
    return {k for k, m in enumerate(messages) if m.get("role") == "assistant"}


def _is_hf(tokenizer: Any) -> bool:
    return hasattr(tokenizer, "convert_tokens_to_ids") or hasattr(tokenizer, "apply_chat_template")


def _has_template(tokenizer: Any) -> bool:
    return callable(getattr(tokenizer, "apply_chat_template", None)) and bool(
        getattr(tokenizer, "chat_template", None)
    )


def _no_template(tokenizer: Any) -> str:
    name = getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__
    return (
        f"the tokenizer {name!r} has no chat template; set tokenizer.chat_template, or pass "
        "template=False to join the messages as 'role: content' lines"
    )


def _not_ids(ids: Any) -> str | None:
    """What a callable tokenizer returned that is not a list of token ids (``str``, ``a list
    holding float``, ``a list holding bool``, ``a list holding -5, not an id from 0 to 2**63 -
    1``), or None: ids are ints (NumPy's too), never a bool, which Python counts as an int, and
    each one a 64-bit table column and a tensor hold (never a column of texts)."""
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
        return type(ids).__name__
    odd = [i for i in ids if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer))]
    if odd:
        return f"{article(type(ids).__name__)} holding {type(odd[0]).__name__}"
    out = [int(i) for i in ids if not 0 <= int(i) < 2**63]
    return f"{article(type(ids).__name__)} holding {out[0]}, not an id from 0 to 2**63 - 1" if out else None


def _lists(made: Any, key: str, texts: list[str], like: list[list[int]] | None = None) -> list[list[int]]:
    """A Hugging Face tokenizer's ``key`` (``input_ids``) for ``texts``, checked as a callable
    tokenizer's ids are (:func:`_not_ids`): one list for each text (of ``like``'s lengths, for a
    ``special_tokens_mask``), or a one-line :class:`TokenizerError` saying what it gave."""
    lists: Any = made.get(key) if callable(getattr(made, "get", None)) else None
    many = isinstance(lists, Sequence) and not isinstance(lists, (str, bytes))
    if not many or len(lists) != len(texts):
        said = counted(len(lists), "list") if many else type(lists).__name__
        raise TokenizerError(
            f"the tokenizer gave {said} as {key!r} for a batch of {counted(len(texts), 'text')}; a "
            "Hugging Face tokenizer object must give one list of token ids for each text"
        )
    for i, ids in enumerate(lists):
        wrong = _not_ids(ids)
        if wrong is None and like is not None and len(ids) != len(like[i]):
            wrong = f"{counted(len(ids), 'mark')} for {counted(len(like[i]), 'token id')}"
        if wrong is not None:
            raise TokenizerError(
                f"the tokenizer gave {wrong} as {key!r} for text {i} of a batch; expected token ids"
            )
    return [[int(t) for t in ids] for ids in lists]
