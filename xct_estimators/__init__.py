"""XCTFormer for Darts and sktime."""

__version__ = "0.1.0"
