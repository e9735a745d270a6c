"""The Keras side of the recipes' end-to-end tests (imports keras_hub only when called)."""

from __future__ import annotations


def bert_backbone(config: dict):
    import keras_hub

    return keras_hub.models.BertBackbone(
        vocabulary_size=config["vocab_size"],
        num_layers=config["num_hidden_layers"],
        num_heads=config["num_attention_heads"],
        hidden_dim=config["hidden_size"],
        intermediate_dim=config["intermediate_size"],
        max_sequence_length=config["max_position_embeddings"],
        num_segments=config["type_vocab_size"],
        dropout=0.0,
    )
