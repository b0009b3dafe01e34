// A broker-side KIP-714 receiver for the tests: records every PushTelemetry payload it gets as
// one JSON line in the file named by the broker property aiokafkawire.telemetry.file.
// Compiled by aiokafkawire.testing.telemetry against the broker's own jars.  It uses the
// ClientTelemetryExporterProvider interface of Kafka 4.x (ClientTelemetry, the first KIP-714
// interface, is deprecated for removal there; the broker takes either).
package aiokafkawire.testing;

import java.io.FileWriter;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.server.telemetry.ClientTelemetryContext;
import org.apache.kafka.server.telemetry.ClientTelemetryExporter;
import org.apache.kafka.server.telemetry.ClientTelemetryExporterProvider;
import org.apache.kafka.server.telemetry.ClientTelemetryPayload;
import org.apache.kafka.shaded.io.opentelemetry.proto.common.v1.AnyValue;
import org.apache.kafka.shaded.io.opentelemetry.proto.common.v1.KeyValue;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.Metric;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.MetricsData;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.NumberDataPoint;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.ResourceMetrics;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.ScopeMetrics;

public class TelemetryRecorder
        implements MetricsReporter, ClientTelemetryExporterProvider, ClientTelemetryExporter {
    private volatile String path;

    @Override public void configure(Map<String, ?> configs) {
        Object value = configs.get("aiokafkawire.telemetry.file");
        path = value == null ? null : value.toString();
    }
    @Override public void init(List<KafkaMetric> metrics) { }
    @Override public void metricChange(KafkaMetric metric) { }
    @Override public void metricRemoval(KafkaMetric metric) { }
    @Override public void close() { }
    @Override public ClientTelemetryExporter clientTelemetryExporter() { return this; }

    private static String quote(String text) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            if (c == '"' || c == '\\') out.append('\\').append(c);
            else if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
            else out.append(c);
        }
        return out.append('"').toString();
    }

    private static String anyValue(AnyValue value) {
        switch (value.getValueCase()) {
            case STRING_VALUE: return quote(value.getStringValue());
            case INT_VALUE: return Long.toString(value.getIntValue());
            case DOUBLE_VALUE: return Double.toString(value.getDoubleValue());
            case BOOL_VALUE: return Boolean.toString(value.getBoolValue());
            default: return "null";
        }
    }

    private static String attributes(List<KeyValue> attributes) {
        StringBuilder out = new StringBuilder("{");
        for (KeyValue kv : attributes) {
            if (out.length() > 1) out.append(',');
            out.append(quote(kv.getKey())).append(':').append(anyValue(kv.getValue()));
        }
        return out.append('}').toString();
    }

    private static String points(String kind, List<NumberDataPoint> points, int temporality) {
        StringBuilder out = new StringBuilder();
        for (NumberDataPoint p : points) {
            if (out.length() > 0) out.append(',');
            String value = p.getValueCase() == NumberDataPoint.ValueCase.AS_INT
                ? Long.toString(p.getAsInt()) : Double.toString(p.getAsDouble());
            out.append("{\"kind\":").append(quote(kind)).append(",\"value\":").append(value)
                .append(",\"time_ns\":").append(p.getTimeUnixNano())
                .append(",\"start_ns\":").append(p.getStartTimeUnixNano())
                .append(",\"temporality\":").append(temporality)
                .append(",\"attributes\":").append(attributes(p.getAttributesList())).append('}');
        }
        return out.toString();
    }

    private static String metrics(MetricsData data) {
        StringBuilder out = new StringBuilder("\"resource\":");
        StringBuilder metrics = new StringBuilder();
        String resource = "{}";
        for (ResourceMetrics rm : data.getResourceMetricsList()) {
            resource = attributes(rm.getResource().getAttributesList());
            for (ScopeMetrics sm : rm.getScopeMetricsList()) {
                for (Metric m : sm.getMetricsList()) {
                    String pts;
                    if (m.hasSum()) {
                        pts = points("sum", m.getSum().getDataPointsList(),
                            m.getSum().getAggregationTemporalityValue());
                    } else if (m.hasGauge()) {
                        pts = points("gauge", m.getGauge().getDataPointsList(), 0);
                    } else {
                        pts = "";
                    }
                    if (metrics.length() > 0) metrics.append(',');
                    metrics.append('{').append("\"name\":").append(quote(m.getName()))
                        .append(",\"points\":[").append(pts).append("]}");
                }
            }
        }
        return out.append(resource).append(",\"metrics\":[").append(metrics).append(']').toString();
    }

    @Override
    public void exportMetrics(ClientTelemetryContext context, ClientTelemetryPayload payload) {
        StringBuilder line = new StringBuilder("{");
        line.append("\"received_ms\":").append(System.currentTimeMillis())
            .append(",\"client_instance_id\":").append(quote(payload.clientInstanceId().toString()))
            .append(",\"terminating\":").append(payload.isTerminating())
            .append(",\"content_type\":").append(quote(String.valueOf(payload.contentType())))
            .append(",\"client_id\":")
            .append(quote(String.valueOf(context.authorizableRequestContext().clientId())))
            .append(",\"push_interval_ms\":").append(context.pushIntervalMs())
            .append(',');
        try {
            ByteBuffer data = payload.data().duplicate();
            line.append(metrics(MetricsData.parseFrom(data)));
        } catch (Exception e) {
            line.append("\"error\":").append(quote(e.toString()));
        }
        line.append("}\n");
        String target = path;
        if (target == null) return;
        synchronized (TelemetryRecorder.class) {
            try (FileWriter writer = new FileWriter(target, true)) {
                writer.write(line.toString());
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        }
    }
}
