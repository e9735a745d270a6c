# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""``bert-to-keras-hub``: Google BERT (TF1) into ``keras_hub.models.BertBackbone``.

The checkpoint side is what bert-tensorflow's ``modeling.BertModel`` writes (Google's
released checkpoints, ``run_pretraining.py`` and ``run_classifier.py`` outputs); the target
side is keras-hub's ``BertBackbone`` weight names. Every rule is a regex over the layer
number, so one recipe serves every BERT size (the model must be built with the
checkpoint's ``vocab_size``, ``hidden_size``, ``num_hidden_layers``,
``num_attention_heads``, ``intermediate_size``, ``max_position_embeddings`` and
``type_vocab_size``; any difference is a shape error at plan time naming both shapes).

Layouts: TF1 BERT's attention projections are dense ``[H, H]`` kernels whose output is
split into heads head-major; keras-hub's ``EinsumDense`` kernels are ``[H, heads,
head_dim]`` (query/key/value) and ``[heads, head_dim, H]`` (output), biases ``[heads,
head_dim]``. These are the same numbers in the same order, so ``reshape()`` (to the
target's shape, no copy) is the whole conversion.

Dropped with a report line: optimizer state and ``global_step``, and the pre-training
heads under ``cls/`` (masked-LM and next-sentence; a backbone has no head).
"""

from __future__ import annotations

import re

from ..transforms.pipeline import to
from ..transforms.steps import reshape
from ._common import TRAINING_STATE
from .recipe import Recipe

_LAYER = r"bert/encoder/layer_(\d+)/"
_TO = r"transformer_layer_\1/"

RULES = {
    "bert/embeddings/word_embeddings": "token_embedding/embeddings",
    "bert/embeddings/position_embeddings": "position_embedding/embeddings",
    "bert/embeddings/token_type_embeddings": "segment_embedding/embeddings",
    "bert/embeddings/LayerNorm/": "embeddings_layer_norm/",
    re.compile(_LAYER + r"attention/self/(query|key|value)/(kernel|bias)"): to(
        _TO + r"self_attention_layer/\2/\3", reshape()
    ),
    re.compile(_LAYER + r"attention/output/dense/(kernel|bias)"): to(
        _TO + r"self_attention_layer/attention_output/\2", reshape()
    ),
    re.compile(_LAYER + r"attention/output/LayerNorm/(gamma|beta)"): (
        _TO + r"self_attention_layer_norm/\2"
    ),
    re.compile(_LAYER + r"intermediate/dense/(kernel|bias)"): (
        _TO + r"feedforward_intermediate_dense/\2"
    ),
    re.compile(_LAYER + r"output/dense/(kernel|bias)"): _TO + r"feedforward_output_dense/\2",
    re.compile(_LAYER + r"output/LayerNorm/(gamma|beta)"): _TO + r"feedforward_layer_norm/\2",
    "bert/pooler/dense/": "pooled_dense/",
}

BERT_TO_KERAS_HUB = Recipe(
    name="bert-to-keras-hub",
    rules=RULES,
    drop=(*TRAINING_STATE, r"^cls/"),
    requires=(
        r"^bert/embeddings/word_embeddings$",
        r"^bert/encoder/layer_0/attention/self/query/kernel$",
    ),
    description="Google BERT (bert-tensorflow modeling.BertModel, TF1) -> "
    "keras_hub.models.BertBackbone",
)
