"""Sphinx configuration of the API reference (``docs/api``): one page per public class and function,
from their numpydoc docstrings.

    pip install 'xct-estimators[docs]'
    python -m sphinx -W --keep-going -b html docs/api docs/api/_build
"""

import xct_estimators

project = "xct-estimators"
author = "xct-estimators developers"
release = version = xct_estimators.__version__

extensions = ["sphinx.ext.autodoc", "sphinx.ext.autosummary", "numpydoc"]
autosummary_generate = True
autodoc_default_options = {"members": True, "inherited-members": False, "show-inheritance": True}
autodoc_typehints = "none"  # the numpydoc "Parameters" sections say the types
# Darts' and Lightning's own members stay on their sites; ours are listed on each class page.
numpydoc_show_inherited_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
exclude_patterns = ["_build"]
templates_path = ["_templates"]
html_theme = "alabaster"
html_title = f"xct-estimators {release}"
