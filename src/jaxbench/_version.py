"""The package version (its own module: the evaluator records it without importing the
package's face)."""

__version__ = "0.1.0"
