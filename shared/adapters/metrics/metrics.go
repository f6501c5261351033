// Package metrics holds a process's Prometheus metrics: what its HTTP API answered and what its
// workers ran, with the Go runtime's and the process's own.
package metrics

import (
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the collectors of one process, on a registry of its own.
type Metrics struct {
	registry     *prometheus.Registry
	handler      http.Handler
	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec
	httpInFlight prometheus.Gauge
	// storeCommands is the store commands per HTTP request.
	storeCommands *prometheus.HistogramVec
	tasks         *prometheus.CounterVec
	taskDuration  *prometheus.HistogramVec
	// taskCommands is the store commands per task.
	taskCommands *prometheus.HistogramVec
	cycles       prometheus.Counter
	provider     *prometheus.CounterVec
	providerTime prometheus.Histogram
	events       *prometheus.CounterVec
	eventLag     prometheus.Histogram
	outbox       prometheus.Gauge
	outboxAside  *prometheus.CounterVec
	ingested     *prometheus.CounterVec
	channels     *prometheus.CounterVec
}

// New returns the metrics of a process.
func New() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentplane_http_requests_total",
			Help: "HTTP requests answered, by route template, method and status."}, []string{"route", "method", "status"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agentplane_http_request_duration_seconds",
			Help:    "Time to answer HTTP requests (to the end of a stream for event streams), by route template and method.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12)}, []string{"route", "method"}),
		taskCommands: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agentplane_task_store_commands",
			Help:    "Store commands (round trips on MongoDB) a queue task made, by task type.",
			Buckets: []float64{0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64, 128}}, []string{"type"}),
		storeCommands: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agentplane_http_store_commands",
			Help:    "Store commands (round trips on MongoDB) an HTTP request made, by route template and method.",
			Buckets: []float64{0, 1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 30}}, []string{"route", "method"}),
		httpInFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "agentplane_http_requests_in_flight",
			Help: "HTTP requests being worked on (streams included; a scrape counts itself)."}),
		tasks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentplane_tasks_total",
			Help: "Queue tasks run by this worker, by type and outcome (ok, error)."}, []string{"type", "outcome"}),
		taskDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agentplane_task_duration_seconds",
			Help: "Time to run queue tasks, by type.", Buckets: prometheus.ExponentialBuckets(0.005, 3, 12)}, []string{"type"}),
		cycles: prometheus.NewCounter(prometheus.CounterOpts{Name: "agentplane_run_cycles_total",
			Help: "Reasoning cycles of agent runs completed by this worker."}),
		provider: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentplane_provider_requests_total",
			Help: "Requests to model providers, by outcome: the status class (2xx, 4xx, 5xx) or error (no answer)."}, []string{"outcome"}),
		providerTime: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "agentplane_provider_request_duration_seconds",
			Help: "Time from a request to a model provider to its response headers.", Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 12)}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentplane_events_consumed_total",
			Help: "Domain events the workflow triggers consumed, by type (workflow.run.succeeded and workflow.run.failed count workflow runs)."}, []string{"type"}),
		eventLag: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "agentplane_event_lag_seconds",
			Help: "Time from a domain event's change to its consumption by the workflow triggers.", Buckets: prometheus.ExponentialBuckets(0.001, 3, 14)}),
		outbox: prometheus.NewGauge(prometheus.GaugeOpts{Name: "agentplane_outbox_backlog",
			Help: "Events the outbox relay found still unpublished in their documents at its last pass (after publishing what it could)."}),
		outboxAside: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentplane_outbox_set_aside_total",
			Help: "Events set aside (collection outbox_aside) because the stream refused them for good, by type."}, []string{"type"}),
		ingested: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentplane_ingested_bytes_total",
			Help: "Bytes of text memory sources were read into (after extraction), by source type (text, document, url)."}, []string{"type"}),
		channels: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentplane_channel_messages_total",
			Help: "Channels' messages by platform type and outcome: received (taken from the platform), sent (an answer it took), retried (one it asked to be sent later), failed (one it refused for good)."},
			[]string{"type", "outcome"}),
	}
	m.registry.MustRegister(m.httpRequests, m.httpDuration, m.storeCommands, m.taskCommands, m.httpInFlight, m.tasks, m.taskDuration, m.cycles, m.provider, m.providerTime, m.events, m.eventLag, m.outbox, m.outboxAside, m.ingested, m.channels,
		// The Go collector adds, to its default metrics, the heap live as of the last collection
		// (go_gc_heap_live_bytes): what the process keeps, which garbage not yet collected does
		// not inflate, for the load's leak check.
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/gc/heap/live:bytes$`)})),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.handler = promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
	return m
}

// Register adds a collector of another package (the store's commands) to the metrics.
func (m *Metrics) Register(c prometheus.Collector) { m.registry.MustRegister(c) }

// Handler serves the metrics in Prometheus's text format.
func (m *Metrics) Handler() http.Handler { return m.handler }

// Begin counts a request in flight until the function it returns is called.
func (m *Metrics) Begin() func() {
	m.httpInFlight.Inc()
	return m.httpInFlight.Dec
}

// Request records an HTTP request answered with status after took, having made commands store
// commands; route is its template ("unmatched" for no route).
func (m *Metrics) Request(route, method string, status int, took time.Duration, commands int64) {
	if route == "" {
		route = "unmatched"
	}
	m.httpRequests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.httpDuration.WithLabelValues(route, method).Observe(took.Seconds())
	m.storeCommands.WithLabelValues(route, method).Observe(float64(commands))
}

// Task records a queue task of type typ run in took, having made commands store commands,
// failed when err is not nil.
func (m *Metrics) Task(typ string, took time.Duration, err error, commands int64) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.tasks.WithLabelValues(typ, outcome).Inc()
	m.taskDuration.WithLabelValues(typ).Observe(took.Seconds())
	m.taskCommands.WithLabelValues(typ).Observe(float64(commands))
}

// RunCycle records a completed reasoning cycle of an agent run.
func (m *Metrics) RunCycle() { m.cycles.Inc() }

// Event records a consumed domain event that occurred at occurred.
func (m *Metrics) Event(typ string, occurred time.Time) {
	m.events.WithLabelValues(typ).Inc()
	m.eventLag.Observe(time.Since(occurred).Seconds())
}

// Ingested records n bytes of text read from a source of type typ.
func (m *Metrics) Ingested(typ string, n int) { m.ingested.WithLabelValues(typ).Add(float64(n)) }

// Channel counts a channel's message of platform typ by outcome (received, sent, retried,
// failed).
func (m *Metrics) Channel(typ, outcome string) { m.channels.WithLabelValues(typ, outcome).Inc() }

// OutboxBacklog records how many events the outbox relay left unpublished.
func (m *Metrics) OutboxBacklog(n int) { m.outbox.Set(float64(n)) }

// OutboxSetAside records an event of type typ set aside because it cannot be published.
func (m *Metrics) OutboxSetAside(typ string) { m.outboxAside.WithLabelValues(typ).Inc() }

// Provider wraps the transport of a model provider's client so that its requests are counted
// and timed (to the response headers; a stream's body is the caller's).
func (m *Metrics) Provider(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		start := time.Now()
		res, err := rt.RoundTrip(req)
		m.providerTime.Observe(time.Since(start).Seconds())
		outcome := "error"
		if err == nil {
			outcome = strconv.Itoa(res.StatusCode/100) + "xx"
		}
		m.provider.WithLabelValues(outcome).Inc()
		return res, err
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// WatchQueue reports the asynq queue's depth at each scrape: agentplane_queue_tasks by state
// and agentplane_queue_latency_seconds, the age of its oldest pending task.
func (m *Metrics) WatchQueue(insp *asynq.Inspector, queue string) {
	m.registry.MustRegister(queueCollector{insp: insp, queue: queue})
}

var (
	queueTasksDesc = prometheus.NewDesc("agentplane_queue_tasks",
		"Tasks in the queue, by state (pending, active, scheduled, retry, archived), read from Redis at the scrape.", []string{"queue", "state"}, nil)
	queueLatencyDesc = prometheus.NewDesc("agentplane_queue_latency_seconds",
		"Age of the queue's oldest pending task, read from Redis at the scrape.", []string{"queue"}, nil)
)

type queueCollector struct {
	insp  *asynq.Inspector
	queue string
}

func (c queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- queueTasksDesc
	ch <- queueLatencyDesc
}

// Collect reads the queue's counts; a queue not created yet is empty, and a Redis that does
// not answer leaves the metrics out of this scrape.
func (c queueCollector) Collect(ch chan<- prometheus.Metric) {
	queues, err := c.insp.Queues()
	if err != nil {
		return
	}
	info := &asynq.QueueInfo{}
	if slices.Contains(queues, c.queue) {
		if info, err = c.insp.GetQueueInfo(c.queue); err != nil {
			return
		}
	}
	for state, n := range map[string]int{"pending": info.Pending, "active": info.Active, "scheduled": info.Scheduled,
		"retry": info.Retry, "archived": info.Archived} {
		ch <- prometheus.MustNewConstMetric(queueTasksDesc, prometheus.GaugeValue, float64(n), c.queue, state)
	}
	ch <- prometheus.MustNewConstMetric(queueLatencyDesc, prometheus.GaugeValue, info.Latency.Seconds(), c.queue)
}
