// Prints Kafka's error table (org.apache.kafka.common.protocol.Errors) as tab-separated values:
// code, name, whether the Java client treats the error as retriable (RetriableException),
// whether it means the client's metadata is stale (InvalidMetadataException), and Kafka's own
// description of the error (the enum's default exception message, as on the protocol guide's
// error table; tabs and line breaks become spaces).
// Run by tools/refresh_kafka_specs.py as a single-file program with kafka-clients on the classpath.

import org.apache.kafka.common.errors.InvalidMetadataException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.protocol.Errors;

public class DumpKafkaErrors {
    public static void main(String[] args) {
        System.out.println("code\tname\tretriable\tinvalid_metadata\tdescription");
        for (Errors error : Errors.values()) {
            Exception exception = error.exception();  // null for NONE
            System.out.println(error.code() + "\t" + error.name()
                + "\t" + (exception instanceof RetriableException)
                + "\t" + (exception instanceof InvalidMetadataException)
                + "\t" + (exception == null ? "" : String.valueOf(exception.getMessage())
                    .replaceAll("\\s+", " ").trim()));
        }
    }
}
