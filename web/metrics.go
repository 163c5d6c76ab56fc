package web

import (
	"database/sql"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"wager/chain"
)

// Metrics holds the Prometheus registry of one server and its HTTP series.
type Metrics struct {
	Registry *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	series   sync.Map // seriesKey -> *series, the children of requests and latency in use
}

// seriesKey is the labels of one route's requests of one status.
type seriesKey struct {
	method, route string
	status        int
}

// series is one label set's counter and histogram, looked up once: a map
// of a struct is cheaper than the label hashing of WithLabelValues on
// every request.
type series struct {
	requests prometheus.Counter
	latency  prometheus.Observer
}

// NewMetrics returns a registry with Go runtime (scheduler included),
// process and HTTP metrics.
func NewMetrics() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		Registry: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "http_requests_total",
			Help: "HTTP requests by method, route pattern and status.",
		}, []string{"method", "route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "http_request_duration_seconds",
			Help:    "HTTP request latency by method, route pattern and status.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"method", "route", "status"}),
	}
	reg.MustRegister(m.requests, m.latency,
		// With the scheduler's: how long goroutines waited to run
		// (go_sched_latencies_seconds). When the cores are saturated, a
		// request's every round trip to the database waits there too.
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsScheduler)),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *Metrics) observe(method, route string, status int, elapsed time.Duration) {
	key := seriesKey{method, route, status}
	v, ok := m.series.Load(key)
	if !ok {
		s := strconv.Itoa(status)
		v, _ = m.series.LoadOrStore(key, &series{m.requests.WithLabelValues(method, route, s),
			m.latency.WithLabelValues(method, route, s)})
	}
	s := v.(*series)
	s.requests.Inc()
	s.latency.Observe(elapsed.Seconds())
}

// Gauge adds a gauge whose value read gives at each scrape (NaN when it
// cannot be known then).
func (m *Metrics) Gauge(name, help string, read func() float64) {
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, read))
}

// RPCEndpoints adds the external chain's RPC calls by endpoint (its host)
// and outcome (solana_rpc_calls_total: ok, timeout, 429, 5xx, error, 4xx)
// and how many endpoints are backed off now
// (solana_rpc_endpoints_backed_off).
func (m *Metrics) RPCEndpoints(e *chain.Endpoints) {
	m.Registry.MustRegister(rpcCollector{e: e,
		calls: prometheus.NewDesc("solana_rpc_calls_total",
			"Solana RPC calls by endpoint host and outcome; any but ok and 4xx backs the endpoint off and tries the next.",
			[]string{"endpoint", "outcome"}, nil),
		backedOff: prometheus.NewDesc("solana_rpc_endpoints_backed_off",
			"Solana RPC endpoints (of SOLANA_RPC_URL) backed off now.", nil, nil)})
}

// rpcCollector reads the endpoints' counts at each scrape: they are kept
// by chain.Endpoints, which knows nothing of Prometheus.
type rpcCollector struct {
	e                *chain.Endpoints
	calls, backedOff *prometheus.Desc
}

func (c rpcCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.calls
	ch <- c.backedOff
}

func (c rpcCollector) Collect(ch chan<- prometheus.Metric) {
	backedOff := 0
	for _, st := range c.e.State() {
		if st.BackedOff {
			backedOff++
		}
		for _, o := range chain.CallOutcomes() {
			ch <- prometheus.MustNewConstMetric(c.calls, prometheus.CounterValue, float64(st.Calls[o]), st.Name, o.String())
		}
	}
	ch <- prometheus.MustNewConstMetric(c.backedOff, prometheus.GaugeValue, float64(backedOff))
}

// Database adds the statistics of db's pool of connections, labelled
// db_name=name: the connections open and in use, and how often and how
// long statements waited for one (go_sql_wait_count_total,
// go_sql_wait_duration_seconds_total). Waits that keep growing are more
// work than the connections, or the cores behind them, keep up with.
func (m *Metrics) Database(db *sql.DB, name string) {
	m.Registry.MustRegister(collectors.NewDBStatsCollector(db, name))
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
}
