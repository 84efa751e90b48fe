package metrics_test

import (
	"log"
	"net/http"

	"github.com/batonhq/baton/cronx"
	"github.com/batonhq/baton/metrics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// A Cron's metrics on the application's own registry, served at /metrics.
func Example() {
	reg := prometheus.NewRegistry()
	obs, err := metrics.New(reg)
	if err != nil {
		log.Fatal(err)
	}
	c := cronx.New(cronx.WithObserver(obs)) // and cronx.WithEtcd(client) to coordinate
	c.AddFunc("@hourly", func() { log.Print("hourly report") })
	c.Start()
	defer c.Stop()

	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	// http.ListenAndServe("127.0.0.1:9090", nil)
}
