"""The service's routes by area: ``health`` (liveness, metrics), ``query`` (questions,
batches, answer streams) and ``explore`` (the index, tree, graph and documents); each
module's ``router(service)`` makes its ``APIRouter``."""
