package serve

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clinfer/clinfer"
)

// metrics are the server's Prometheus metrics. Names follow Prometheus'
// conventions (base units, _total counters, _seconds histograms); the
// README maps them to Triton's and OpenVINO Model Server's.
type metrics struct {
	s        *Server
	requests *prometheus.CounterVec   // clinfer_inference_requests_total{model,version,protocol,outcome}
	duration *prometheus.HistogramVec // clinfer_inference_request_duration_seconds{model,version,protocol}
	queue    *prometheus.HistogramVec // clinfer_inference_queue_duration_seconds{model,version}
	compute  *prometheus.HistogramVec // clinfer_inference_compute_duration_seconds{model,version}
	http     *prometheus.CounterVec   // http_requests_total{handler,method,code}
	grpc     *prometheus.CounterVec   // grpc_server_handled_total{grpc_service,grpc_method,grpc_code}

	pendingDesc, batchDesc, execDesc, memDesc, readyDesc *prometheus.Desc
}

// latencyBuckets span 100 µs to 30 s.
var latencyBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

func newMetrics(s *Server) (*metrics, error) {
	m := &metrics{
		s: s,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "clinfer_inference_requests_total",
			Help: "Inference requests answered, by model, version, protocol (rest, grpc) and outcome (success, invalid, rejected, timeout, canceled, unavailable, unauthenticated, error).",
		}, []string{"model", "version", "protocol", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "clinfer_inference_request_duration_seconds", Buckets: latencyBuckets,
			Help: "Time from a request's arrival to its response being ready, of successful inference requests: decoding, queue, compute and encoding.",
		}, []string{"model", "version", "protocol"}),
		queue: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "clinfer_inference_queue_duration_seconds", Buckets: latencyBuckets,
			Help: "Time successful inference requests waited in the model's queue for a free inference request.",
		}, []string{"model", "version"}),
		compute: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "clinfer_inference_compute_duration_seconds", Buckets: latencyBuckets,
			Help: "Time successful inferences took on the device (CompiledModel.Infer), gathering into a batch included.",
		}, []string{"model", "version"}),
		http: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "http_requests_total", Help: "HTTP requests answered, by route pattern, method and status code.",
		}, []string{"handler", "method", "code"}),
		grpc: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grpc_server_handled_total", Help: "gRPC calls answered, by service, method and status code.",
		}, []string{"grpc_service", "grpc_method", "grpc_code"}),
		pendingDesc: prometheus.NewDesc("clinfer_inference_pending_requests",
			"Inference requests queued or running now, by model and version.", []string{"model", "version"}, nil),
		batchDesc: prometheus.NewDesc("clinfer_inference_batch_size",
			"Requests per inference of models that batch (BATCH): batched inferences count the batch size, lone ones 1.", []string{"model", "version"}, nil),
		execDesc: prometheus.NewDesc("clinfer_inference_executions_total",
			"Inferences run on the device for models that batch (batched and lone); requests divided by executions is the mean batch size.", []string{"model", "version"}, nil),
		memDesc: prometheus.NewDesc("clinfer_device_memory_bytes",
			"Device memory in use by kind (weights, activations, staging, remote_tensors), from GPU_MEMORY_STATISTICS of the devices serving models.", []string{"device", "kind"}, nil),
		readyDesc: prometheus.NewDesc("clinfer_model_ready",
			"1 for each served model version.", []string{"model", "version"}, nil),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.queue, m.compute, m.http, m.grpc, m} {
		if err := s.opts.Registerer.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// observe records one inference request.
func (m *metrics) observe(protocol, model, version, outcome string, total time.Duration, tm timing, ran bool) {
	m.requests.WithLabelValues(model, version, protocol, outcome).Inc()
	if outcome != "success" {
		return
	}
	m.duration.WithLabelValues(model, version, protocol).Observe(total.Seconds())
	if ran {
		m.queue.WithLabelValues(model, version).Observe(tm.queue.Seconds())
		m.compute.WithLabelValues(model, version).Observe(tm.compute.Seconds())
	}
}

// Describe sends the descriptions of the metrics read at scrape time.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.pendingDesc, m.batchDesc, m.execDesc, m.memDesc, m.readyDesc} {
		ch <- d
	}
}

// batchBuckets are the batch-size histogram's bounds.
var batchBuckets = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256}

// Collect reads the served versions' queues and batch counters and the
// devices' memory statistics.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	var vs []*version
	m.s.mu.RLock()
	for _, md := range m.s.models {
		for _, v := range md.versions {
			vs = append(vs, v)
		}
	}
	m.s.mu.RUnlock()
	devices := map[string]bool{}
	for _, v := range vs {
		ver := strconv.FormatInt(v.number, 10)
		ch <- prometheus.MustNewConstMetric(m.readyDesc, prometheus.GaugeValue, 1, v.model, ver)
		ch <- prometheus.MustNewConstMetric(m.pendingDesc, prometheus.GaugeValue, float64(len(v.admit)), v.model, ver)
		if st, ok := v.cm.BatchStats(); ok {
			ch <- batchHistogram(m.batchDesc, st, v.model, ver)
			ch <- prometheus.MustNewConstMetric(m.execDesc, prometheus.CounterValue, float64(st.Batches+st.Alone), v.model, ver)
		}
		if devs, err := v.cm.ExecutionDevices(); err == nil {
			for _, d := range devs {
				if strings.HasPrefix(d, "GPU") {
					devices[d] = true
				}
			}
		}
	}
	names := make([]string, 0, len(devices))
	for d := range devices {
		names = append(names, d)
	}
	sort.Strings(names)
	for _, d := range names {
		val, err := m.s.core.Property(d, "GPU_MEMORY_STATISTICS")
		if err != nil {
			continue
		}
		st, err := clinfer.ParseMemoryStatistics(val)
		if err != nil {
			continue
		}
		for _, kv := range []struct {
			kind string
			n    int64
		}{{"weights", st.Weights}, {"activations", st.Activations}, {"staging", st.Staging}, {"remote_tensors", st.RemoteTensors}} {
			ch <- prometheus.MustNewConstMetric(m.memDesc, prometheus.GaugeValue, float64(kv.n), d, kv.kind)
		}
	}
}

// batchHistogram is the exact histogram of batch sizes BatchStats
// implies: every batched inference had Size requests, every lone one 1.
func batchHistogram(desc *prometheus.Desc, st clinfer.BatchStats, labels ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(batchBuckets))
	for _, b := range batchBuckets {
		n := uint64(st.Alone)
		if b >= float64(st.Size) {
			n += uint64(st.Batches)
		}
		buckets[b] = n
	}
	sum := float64(st.Alone) + float64(st.Size)*float64(st.Batches)
	return prometheus.MustNewConstHistogram(desc, uint64(st.Alone+st.Batches), sum, buckets, labels...)
}
