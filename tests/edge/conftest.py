from tests.api.support import api, upstream

__all__ = ["api", "upstream"]
