"""``aiokafka.coordinator.assignors``: the assignor base class and the built-in assignors."""
