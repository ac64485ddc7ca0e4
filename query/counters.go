package query

import (
	"context"
	"fmt"
	"slices"

	"github.com/orchstat/orchstat/model/reports"
)

// Counters are the store's totals of every count the catalog's metrics
// are made of (reports.Counters), per label set the catalog lets each be
// split by: the trace runs' counts overall, the provider requests' by
// provider and model, the records' by system, the agents' calls' by
// system, provider and model. No window: ingest only adds, so each total
// only grows while the store lives, which is what a Prometheus counter
// needs.
func (st *Store) Counters(ctx context.Context) ([]reports.CounterGroup, error) {
	specs, err := reports.Counters()
	if err != nil {
		return nil, err
	}
	if err := st.priced(ctx); err != nil {
		return nil, err
	}
	q, all := st.conn, Filter{}
	var groups []reports.CounterGroup
	trace, err := traceMetrics(ctx, q, all)
	if err != nil {
		return nil, err
	}
	groups = append(groups, reports.CounterGroup{Family: reports.FamilyTrace, Labels: map[string]string{},
		Counts: reports.CountsOf(reports.FamilyTrace, trace)})
	requests, err := providerCounts(ctx, q, all, []string{"provider", "model"})
	if err != nil {
		return nil, fmt.Errorf("counting provider requests: %w", err)
	}
	groups = append(groups, requests...)
	if ok, err := hasRecords(ctx, q); err != nil {
		return nil, err
	} else if ok {
		keys, by, err := recordMetricsBy(ctx, q, all, "system")
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			groups = append(groups, reports.CounterGroup{Family: reports.FamilyRecord,
				Labels: map[string]string{"system": k}, Counts: reports.CountsOf(reports.FamilyRecord, by[k])})
		}
	}
	if ok, err := hasCalls(ctx, q); err != nil {
		return nil, err
	} else if ok {
		keys, rows, err := callGroups(ctx, q, all, "system", "provider", "model")
		if err != nil {
			return nil, err
		}
		for i, r := range rows {
			groups = append(groups, reports.CounterGroup{Family: reports.FamilyCall,
				Labels: map[string]string{"system": keys[i][0], "provider": keys[i][1], "model": keys[i][2]},
				Counts: reports.CountsOf(reports.FamilyCall, r.Metrics)})
		}
	}
	return keepLabelled(groups, specs), nil
}

// keepLabelled keeps, in each group, the counts whose counter has exactly
// the group's labels: the trace family's overall group also counts the
// provider requests, whose counters are split by provider and model.
func keepLabelled(groups []reports.CounterGroup, specs []reports.CounterSpec) []reports.CounterGroup {
	for _, g := range groups {
		for c := range g.Counts {
			i := slices.IndexFunc(specs, func(s reports.CounterSpec) bool { return s.Family == g.Family && s.Count == c })
			if i < 0 || len(specs[i].Labels) != len(g.Labels) {
				delete(g.Counts, c)
				continue
			}
			for _, l := range specs[i].Labels {
				if _, ok := g.Labels[l]; !ok {
					delete(g.Counts, c)
				}
			}
		}
	}
	return groups
}
