package repo

import (
	"context"
	"encoding/json"
)

// WriteCheckpointOnly does the first step of a forget and stops, as a
// forget killed right after it would.
func (r *Repo) WriteCheckpointOnly(ctx context.Context, agent string, p Policy) error {
	_, cp, err := r.planForget(ctx, agent, p)
	if err != nil {
		return err
	}
	data, err := json.Marshal(cp)
	if err != nil {
		return err
	}
	return r.Storage.SetMeta(ctx, checkpointName(agent), data)
}

// SetRedactHook sets the function a redaction calls at each step (a test
// kills the process there).
func SetRedactHook(f func(step string)) { redactHook = f }
