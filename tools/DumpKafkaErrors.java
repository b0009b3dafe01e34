// Prints Kafka's error table (org.apache.kafka.common.protocol.Errors) as tab-separated values:
// code, name, whether the Java client treats the error as retriable (RetriableException) and
// whether it means the client's metadata is stale (InvalidMetadataException).
// Run by tools/refresh_kafka_specs.py as a single-file program with kafka-clients on the classpath.

import org.apache.kafka.common.errors.InvalidMetadataException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.protocol.Errors;

public class DumpKafkaErrors {
    public static void main(String[] args) {
        System.out.println("code\tname\tretriable\tinvalid_metadata");
        for (Errors error : Errors.values()) {
            Exception exception = error.exception();  // null for NONE
            System.out.println(error.code() + "\t" + error.name()
                + "\t" + (exception instanceof RetriableException)
                + "\t" + (exception instanceof InvalidMetadataException));
        }
    }
}
