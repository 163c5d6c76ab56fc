package handlers

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"wager/domain"
	"wager/domain/reserves"
)

// reservesCollector puts the latest proof of reserves on /metrics, read
// once a scrape: its liabilities, its assets and the shortfall (assets
// below liabilities: the alert). Each is NaN before the first snapshot.
type reservesCollector struct {
	reserves                       *reserves.Service
	log                            *slog.Logger
	liabilities, assets, shortfall *prometheus.Desc
}

func newReservesCollector(r *reserves.Service, log *slog.Logger) reservesCollector {
	return reservesCollector{reserves: r, log: log,
		liabilities: prometheus.NewDesc("reserves_liabilities_minor",
			"What the platform owed its users at the latest proof of reserves (GET /reserves), in USDC minor units.", nil, nil),
		assets: prometheus.NewDesc("reserves_assets_minor",
			"The USDC the platform's token accounts held on chain at the latest proof of reserves, in minor units.", nil, nil),
		shortfall: prometheus.NewDesc("reserves_shortfall_minor",
			"Alert above 0: how far the assets on chain fell below the liabilities at the latest proof of reserves, in USDC minor units; 0 when they cover them.",
			nil, nil)}
}

func (c reservesCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.liabilities
	ch <- c.assets
	ch <- c.shortfall
}

func (c reservesCollector) Collect(ch chan<- prometheus.Metric) {
	liabilities, assets, shortfall := math.NaN(), math.NaN(), math.NaN()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s, err := c.reserves.Latest(ctx)
	var derr *domain.Error
	switch {
	case errors.As(err, &derr) && derr.Code == domain.CodeNotFound:
	case err != nil:
		c.log.Error("metrics: the latest proof of reserves", "err", err)
	default:
		liabilities, assets, shortfall = float64(s.LiabilitiesMinor), float64(s.AssetsMinor), float64(s.Shortfall())
	}
	ch <- prometheus.MustNewConstMetric(c.liabilities, prometheus.GaugeValue, liabilities)
	ch <- prometheus.MustNewConstMetric(c.assets, prometheus.GaugeValue, assets)
	ch <- prometheus.MustNewConstMetric(c.shortfall, prometheus.GaugeValue, shortfall)
}
