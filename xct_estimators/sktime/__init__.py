"""sktime estimators built on XCTFormer."""

from .detector import XCTFormerAnomalyDetector
from .imputer import XCTFormerImputer

__all__ = ["XCTFormerAnomalyDetector", "XCTFormerImputer"]
