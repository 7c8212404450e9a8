package inspect_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag/inspect"
)

// The task log takes a range A..B as log does: the tasks that landed on
// B's history and not on A's (task revisions as the ends too).
func TestTasksRange(t *testing.T) {
	v, _ := taskFixture(t)
	ctx := context.Background()
	ids := func(rev string) string {
		t.Helper()
		lg, err := v.Tasks(ctx, "lumen", inspect.TaskOptions{Rev: rev})
		if err != nil {
			t.Fatalf("%s: %v", rev, err)
		}
		var out []string
		for _, tk := range lg.Tasks {
			out = append(out, tk.ID+"@"+tk.Attempt)
		}
		return strings.Join(out, " ")
	}
	for rev, want := range map[string]string{
		"task:retry@1..task:slow":  "slow@ fast@ retry@2",
		"task:retry@1..":           "gone@ slow@ fast@ retry@2",
		"task:fast..HEAD":          "gone@ slow@",
		"..task:slow":              "",
		"HEAD..":                   "",
		"task:write..task:retry@2": "retry@2 retry@1",
	} {
		if got := ids(rev); got != want {
			t.Errorf("%s: %q, want %q", rev, got, want)
		}
	}
	// The fork's history is the same, found from commits.
	if lg, err := v.Tasks(ctx, "copy", inspect.TaskOptions{Rev: "task:retry@1..task:slow"}); err != nil || len(lg.Tasks) != 3 {
		t.Errorf("copy: %+v %v", lg, err)
	}
	for _, rev := range []string{"HEAD...HEAD~1", "HEAD..HEAD..HEAD", "nope..HEAD"} {
		if _, err := v.Tasks(ctx, "lumen", inspect.TaskOptions{Rev: rev}); !errors.Is(err, inspect.ErrBadRequest) && !errors.Is(err, inspect.ErrNotFound) {
			t.Errorf("%s: %v", rev, err)
		}
	}
}
