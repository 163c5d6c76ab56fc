package main

import (
	"cmp"
	"maps"
	"slices"
	"sort"
	"time"
)

// SecondLatency is the delivery latency of the actions sent in one second.
type SecondLatency struct {
	Second int `json:"second"`
	Latency
}

// slowest returns the second with the highest p99, and false when there
// is none.
func slowest(ss []SecondLatency) (SecondLatency, bool) {
	if len(ss) == 0 {
		return SecondLatency{}, false
	}
	return slices.MaxFunc(ss, func(a, b SecondLatency) int { return cmp.Compare(a.P99Ms, b.P99Ms) }), true
}

// Delivery is what spectators received of the games they followed.
type Delivery struct {
	Latency      Latency `json:"latency" doc:"from the action's request being sent to each spectator receiving each event it caused"`
	Expected     int     `json:"expected" doc:"events each joined spectator should have received, summed"`
	Received     int     `json:"received" doc:"of those, received (distinct seqs)"`
	DeliveredPct float64 `json:"deliveredPct"`
	Unattributed int     `json:"unattributed" doc:"action-type events that no recorded action explains (round timers, failed answers)"`
	Joins        int     `json:"joins" doc:"game rooms joined"`
	JoinLatency  Latency `json:"joinLatency" doc:"join-game sent to its joined frame"`
	Refused      int     `json:"refused" doc:"joins the server refused (game not active...)"`
	Unanswered   int     `json:"unanswered" doc:"joins never answered"`
	Resyncs      int     `json:"resyncs"`
	// BySecond is Latency by the second of the run its action was sent in
	// (from the window's start): a tail that comes from one moment, such
	// as games ending together, shows as one slow second.
	BySecond   []SecondLatency `json:"bySecond"`
	Reconnects int             `json:"reconnects"`
	Stray      int             `json:"stray" doc:"event frames of games the socket never joined"`
}

// analyze matches every spectator's frames to the actions that caused
// them. Latencies count only actions sent in w; delivery counts every
// membership up to its game's last seq.
func analyze(specs []*spectator, w window) Delivery {
	type gameView struct {
		acts []actionRecord
		last int
	}
	views := map[*gameLog]gameView{}
	view := func(g *gameLog) gameView {
		v, ok := views[g]
		if !ok {
			v.acts, v.last = g.snapshot()
			views[g] = v
		}
		return v
	}
	var d Delivery
	var lat, joins []time.Duration
	bySecond := map[int][]time.Duration{}
	for _, s := range specs {
		s.mu.Lock()
		d.Resyncs += s.resyncs
		d.Reconnects += s.reconnects
		d.Stray += s.stray
		for _, m := range s.order {
			switch {
			case m.refused != "":
				d.Refused++
				continue
			case m.joinSeq < 0:
				d.Unanswered++
				continue
			}
			d.Joins++
			joins = append(joins, m.joinedAt-m.requested)
			v := view(m.game)
			seen := make(map[int]bool, len(m.frames))
			for _, f := range m.frames {
				if seen[f.seq] {
					continue // a replay after a rejoin
				}
				seen[f.seq] = true
				if f.seq > m.joinSeq && f.seq <= v.last {
					d.Received++
				}
				if !f.move || f.seq <= m.joinSeq {
					continue
				}
				// The cause is the first action whose answer's seq reaches
				// this event: actions of one game commit one at a time.
				i := sort.Search(len(v.acts), func(i int) bool { return v.acts[i].seq >= f.seq })
				if i == len(v.acts) || f.at < v.acts[i].sent {
					d.Unattributed++
					continue
				}
				if sent := v.acts[i].sent; w.contains(sent) {
					lat = append(lat, f.at-sent)
					sec := int((sent - w.From) / time.Second)
					bySecond[sec] = append(bySecond[sec], f.at-sent)
				}
			}
			d.Expected += max(0, v.last-m.joinSeq)
		}
		s.mu.Unlock()
	}
	d.Latency = Summarize(lat)
	for _, sec := range slices.Sorted(maps.Keys(bySecond)) {
		d.BySecond = append(d.BySecond, SecondLatency{Second: sec, Latency: Summarize(bySecond[sec])})
	}
	d.JoinLatency = Summarize(joins)
	d.DeliveredPct = percent(d.Received, d.Expected)
	return d
}
