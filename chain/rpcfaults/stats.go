package rpcfaults

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"
	"time"
)

// Calls counts what the proxy did with the calls of one method.
type Calls struct {
	Calls          int           // received
	Forwarded      int           // answered by the target
	Delayed        int           // held back before anything else
	Delay          time.Duration // held back in all
	TimedOut       int           // hung until the client gave up
	LostAnswers    int           // forwarded, then hung
	TooMany        int           // answered 429
	Unavailable    int           // answered 503
	Dropped        int           // sendTransaction answered, never forwarded
	Hidden         int           // statuses reported null (one per signature)
	Unfinalized    int           // statuses reported confirmed, not finalized
	UpstreamErrors int           // the target did not answer: 502
}

func (c *Calls) add(o Calls) {
	c.Calls += o.Calls
	c.Forwarded += o.Forwarded
	c.Delayed += o.Delayed
	c.Delay += o.Delay
	c.TimedOut += o.TimedOut
	c.LostAnswers += o.LostAnswers
	c.TooMany += o.TooMany
	c.Unavailable += o.Unavailable
	c.Dropped += o.Dropped
	c.Hidden += o.Hidden
	c.Unfinalized += o.Unfinalized
	c.UpstreamErrors += o.UpstreamErrors
}

// Stats are the counts of every method the proxy has seen.
type Stats struct {
	Methods map[string]Calls
}

// Stats returns a copy of the counts so far.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Stats{Methods: make(map[string]Calls, len(p.stats))}
	for m, c := range p.stats {
		s.Methods[m] = *c
	}
	return s
}

// Total adds up every method's counts.
func (s Stats) Total() Calls {
	var t Calls
	for _, c := range s.Methods {
		t.add(c)
	}
	return t
}

// Write writes the counts as a table, a line per method and one of totals,
// and returns the writer's error.
func (s Stats) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "method\tcalls\tforwarded\ttimeout\tlost answer\t429\t503\tdropped\thidden\tunfinalized\tupstream errors\tdelay (avg)")
	line := func(name string, c Calls) {
		var avg time.Duration
		if c.Calls > 0 {
			avg = (c.Delay / time.Duration(c.Calls)).Round(time.Millisecond)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%v\n", name, c.Calls, c.Forwarded, c.TimedOut, c.LostAnswers,
			c.TooMany, c.Unavailable, c.Dropped, c.Hidden, c.Unfinalized, c.UpstreamErrors, avg)
	}
	for _, m := range slices.Sorted(maps.Keys(s.Methods)) {
		line(m, s.Methods[m])
	}
	line("total", s.Total())
	return tw.Flush()
}
