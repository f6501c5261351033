// Package metrics holds a process's Prometheus metrics: what its HTTP API answered and what its
// workers ran, with the Go runtime's and the process's own.
package metrics

import (
	"net/http"
	"strconv"
	"time"

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
	tasks        *prometheus.CounterVec
	taskDuration *prometheus.HistogramVec
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
		tasks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentplane_tasks_total",
			Help: "Queue tasks run by this worker, by type and outcome (ok, error)."}, []string{"type", "outcome"}),
		taskDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agentplane_task_duration_seconds",
			Help: "Time to run queue tasks, by type.", Buckets: prometheus.ExponentialBuckets(0.005, 3, 12)}, []string{"type"}),
	}
	m.registry.MustRegister(m.httpRequests, m.httpDuration, m.tasks, m.taskDuration,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.handler = promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
	return m
}

// Handler serves the metrics in Prometheus's text format.
func (m *Metrics) Handler() http.Handler { return m.handler }

// Request records an HTTP request answered with status after took; route is its template
// ("unmatched" for no route).
func (m *Metrics) Request(route, method string, status int, took time.Duration) {
	if route == "" {
		route = "unmatched"
	}
	m.httpRequests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.httpDuration.WithLabelValues(route, method).Observe(took.Seconds())
}

// Task records a queue task of type typ run in took, failed when err is not nil.
func (m *Metrics) Task(typ string, took time.Duration, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.tasks.WithLabelValues(typ, outcome).Inc()
	m.taskDuration.WithLabelValues(typ).Observe(took.Seconds())
}
