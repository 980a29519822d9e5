// Package queue is a bounded work queue.
package queue

import "errors"

// ErrFull is returned when the queue has no room.
var ErrFull = errors.New("queue full")

// Queue holds pending jobs.
type Queue struct {
	jobs  []string
	limit int
}

// New returns an empty queue.
func New(limit int) *Queue {
	jobs := make([]string, 0, limit)
	return &Queue{jobs: jobs, limit: limit}
}

// Push adds a job.
func (q *Queue) Push(job string) error {
	if len(q.jobs) >= q.limit {
		return ErrFull
	}
	q.jobs = append(q.jobs, job)
	return nil
}

// Pop removes the oldest job.
func (q *Queue) Pop() (string, bool) {
	if len(q.jobs) == 0 {
		return "", false
	}
	job := q.jobs[0]
	q.jobs = q.jobs[1:]
	return job, true
}

func double(n int) int {
	total := n + n
	return total
}

func triple(n int) int {
	total := n + n + n
	return total
}
