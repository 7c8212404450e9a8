package inspect

import "context"

// TasksByWalk is View.Tasks by walking the history, never from the
// store's task records.
func TasksByWalk(ctx context.Context, v *View, agent string, o TaskOptions) (TaskLog, error) {
	return v.tasks(ctx, agent, o, false)
}

// TasksFromRecords is View.Tasks from the store's task records only; ok
// is false when they do not give the listing.
func TasksFromRecords(ctx context.Context, v *View, agent string, o TaskOptions) (TaskLog, bool, error) {
	head, err := v.checkAgent(ctx, agent)
	if err != nil {
		return TaskLog{}, false, err
	}
	start, _, err := v.resolve(ctx, agent, o.Rev)
	if err != nil {
		return TaskLog{}, false, err
	}
	out := TaskLog{Head: head.Commit, Tasks: []Task{}}
	ok, err := v.tasksFromRecords(ctx, agent, start, o, &out)
	return out, ok, err
}
