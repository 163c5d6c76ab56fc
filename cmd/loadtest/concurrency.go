package main

import (
	"context"
	"sync"
)

// forEach runs fn(ctx, i) for every i in [0, n), at most conc at a time.
// The first error cancels the calls not yet started and is returned.
func forEach(ctx context.Context, n, conc int, fn func(context.Context, int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, max(conc, 1))
	var wg sync.WaitGroup
loop:
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			break loop
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := fn(ctx, i); err != nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return nil
}
