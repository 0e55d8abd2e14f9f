"""sktime estimators built on XCTFormer."""

from .detector import XCTFormerAnomalyDetector
from .forecaster import XCTFormerForecaster
from .imputer import XCTFormerImputer

__all__ = ["XCTFormerAnomalyDetector", "XCTFormerForecaster", "XCTFormerImputer"]
