package main

// pool calls do(i) for every i from 0 to n-1, on at most workers
// goroutines at once, taking i in order, and calls done(i, result) on the
// calling goroutine as each call returns, in the order they return. It
// returns when every done has returned; done owns whatever it writes to.
func pool[R any](n, workers int, do func(i int) R, done func(i int, r R)) {
	type result struct {
		i int
		r R
	}
	next := make(chan int)
	results := make(chan result)
	for range max(1, min(workers, n)) {
		go func() {
			for i := range next {
				results <- result{i, do(i)}
			}
		}()
	}
	go func() {
		for i := range n {
			next <- i
		}
		close(next)
	}()
	for range n {
		r := <-results
		done(r.i, r.r)
	}
}
