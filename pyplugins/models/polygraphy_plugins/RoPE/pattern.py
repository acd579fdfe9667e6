"""Polygraphy pattern for the RoPE plugin (the matching: pyplugins.models.patterns)."""

from pyplugins.models.polygraphy_plugins import metadata, replace, subgraphs

PLUGIN = "RoPE"


def get_matching_subgraphs(graph):
    """Instances {inputs, outputs, attributes} of the RoPE subgraph in a gs graph."""
    return subgraphs(PLUGIN, graph)


def get_plugin_metadata():
    """{name: the directory name, op: the plugin node's op type}."""
    return metadata(PLUGIN)


def replace_with_plugin(graph, input_tensors, output_tensors, attrs=None, op=None):
    """Insert the plugin node in place of the matched subgraph (named after its output)."""
    return replace(graph, input_tensors, output_tensors, attrs, op)
