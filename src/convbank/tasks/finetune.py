"""Fine-tuning the top layers of the packaged all-MiniLM-L6-v2 encoder for multi-label
text classification, sized for two CPU cores.

The bottom ``frozen`` transformer layers run once over every text and their token states
are kept. Each cross-validation fold then trains a fresh copy of the remaining layers and a
linear head over the mean-pooled tokens plus caller-given dense features (dialogue context),
so a fold costs a fraction of a full fine-tune and no fold sees another fold's labels.

Needs the ``embed`` extra (PyTorch); import it only after checking for it.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from convbank.tasks.features import sentence_model
from convbank.tasks.progress import progress

__all__ = ["TopLayerTuner", "TuneConfig"]


@dataclass(frozen=True)
class TuneConfig:
    """Training settings; the defaults were chosen by 5-fold cross-validation on CaSiNo."""

    frozen: int = 3
    """Bottom layers kept fixed (their outputs are computed once)."""
    epochs: int = 3
    lr: float = 2e-4
    """Learning rate of the trained encoder layers (one-cycle schedule)."""
    head_lr: float = 1e-3
    batch_size: int = 32
    max_tokens: int = 64
    pos_weight_power: float = 0.5
    """Positive examples weigh (negatives / positives) ** this in the loss: 0.5 is the
    square root, between no reweighting (over-cautious on rare labels) and full balancing
    (over-eager)."""


class TopLayerTuner:
    """Token states of ``texts`` below the trained layers, ready for per-fold training."""

    def __init__(self, texts: Sequence[str], config: TuneConfig | None = None) -> None:
        self.config = config or TuneConfig()
        transformer = sentence_model()[0]
        self._encoder = transformer.auto_model
        tokenizer = transformer.tokenizer
        ids = [
            tokenizer(text or "", truncation=True, max_length=self.config.max_tokens)["input_ids"]
            for text in texts
        ]
        pad = tokenizer.pad_token_id or 0
        frozen = self._encoder.encoder.layer[: self.config.frozen]
        self._states: list[torch.Tensor] = [torch.empty(0)] * len(ids)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))  # little padding per batch
        with torch.no_grad():
            for start in range(0, len(order), 64):
                chunk = order[start : start + 64]
                width = max(len(ids[i]) for i in chunk)
                batch = torch.tensor([ids[i] + [pad] * (width - len(ids[i])) for i in chunk])
                mask = torch.tensor([[1.0] * len(ids[i]) + [0.0] * (width - len(ids[i])) for i in chunk])
                states = _through(frozen, self._encoder.embeddings(input_ids=batch), mask)
                for row, i in enumerate(chunk):
                    self._states[i] = states[row, : len(ids[i])].clone()

    def _batch(self, index: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
        width = max(len(self._states[i]) for i in index)
        states = torch.zeros(len(index), width, self._states[index[0]].shape[1])
        mask = torch.zeros(len(index), width)
        for row, i in enumerate(index):
            states[row, : len(self._states[i])] = self._states[i]
            mask[row, : len(self._states[i])] = 1
        return states, mask

    def fit_predict(
        self, y: np.ndarray, extra: np.ndarray, train: np.ndarray, test: np.ndarray, seed: int
    ) -> np.ndarray:
        """Train on the ``train`` rows of ``y`` (items by labels, boolean) and return the
        probabilities of every label for the ``test`` rows. ``extra`` holds dense features
        per item that join the pooled tokens before the head."""
        cfg = self.config
        torch.manual_seed(seed)
        net = _Head(self._encoder.encoder.layer[cfg.frozen :], extra.shape[1], y.shape[1])
        labels = torch.tensor(y, dtype=torch.float32)
        features = torch.tensor(extra, dtype=torch.float32)
        positives = labels[train].sum(0)
        pos_weight = ((len(train) - positives) / positives.clamp(min=1)) ** cfg.pos_weight_power
        ordered = sorted(train.tolist(), key=lambda i: len(self._states[i]))
        batches = [ordered[s : s + cfg.batch_size] for s in range(0, len(ordered), cfg.batch_size)]
        optimiser = torch.optim.AdamW(
            [
                {"params": net.layers.parameters(), "lr": cfg.lr},
                {"params": net.head.parameters(), "lr": cfg.head_lr},
            ],
            weight_decay=0.01,
        )
        schedule = torch.optim.lr_scheduler.OneCycleLR(
            optimiser, max_lr=[cfg.lr, cfg.head_lr], total_steps=cfg.epochs * len(batches), pct_start=0.1
        )
        rng = np.random.default_rng(seed)
        net.train()
        steps = ((epoch, b) for epoch in range(cfg.epochs) for b in rng.permutation(len(batches)))
        for _, b in progress(
            steps, f"fine-tuning: batches of {cfg.epochs} epochs", cfg.epochs * len(batches)
        ):
            index = batches[b]
            logits = net(*self._batch(index), features[index])
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                logits, labels[index], pos_weight=pos_weight
            )
            optimiser.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]
            optimiser.step()
            schedule.step()
        net.eval()
        out = []
        with torch.no_grad():
            for start in range(0, len(test), 64):
                index = test[start : start + 64].tolist()
                out.append(torch.sigmoid(net(*self._batch(index), features[index])))
        return torch.cat(out).numpy() if out else np.zeros((0, y.shape[1]))


class _Head(torch.nn.Module):
    """A trainable copy of the top encoder ``layers``, mean pooling and a linear multi-label head."""

    def __init__(self, layers: Any, extra: int, labels: int) -> None:
        super().__init__()
        self.layers = copy.deepcopy(layers)
        self.drop = torch.nn.Dropout(0.1)
        self.head = torch.nn.Linear(self.layers[0].output.dense.out_features + extra, labels)

    def forward(self, states: torch.Tensor, mask: torch.Tensor, features: torch.Tensor) -> torch.Tensor:
        states = _through(self.layers, states, mask)
        pooled = (states * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
        return self.head(self.drop(torch.cat([pooled, features], 1)))  # type: ignore[no-any-return]


def _through(layers: Any, states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``states`` (batch, tokens, hidden) through the encoder ``layers``; ``mask`` is 1 for
    real tokens and 0 for padding."""
    additive = (1.0 - mask[:, None, None, :]) * torch.finfo(torch.float32).min
    for layer in layers:
        out = layer(states, attention_mask=additive)
        states = out[0] if isinstance(out, tuple) else out
    return states
