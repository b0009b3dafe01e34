"""aiokafkawire.consumer."""
