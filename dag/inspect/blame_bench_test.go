package inspect_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/storage/memory"
)

// BenchmarkBlame blames a 200-line skill at the end of 2000 commits: every
// commit changes another key, every 20th one line of the skill (100
// versions to diff), the other 1900 cost a tree path each.
func BenchmarkBlame(b *testing.B) {
	ctx := context.Background()
	v := inspect.New(repo.New(memory.New()))
	lines := make([]string, 200)
	for i := range lines {
		lines[i] = fmt.Sprintf("line %d of the skill", i)
	}
	for i := range 2000 {
		key, text := "other", fmt.Sprint(i)
		if i%20 == 0 {
			lines[(i/20*37)%len(lines)] = fmt.Sprintf("line changed by commit %d", i)
			key, text = "skill.md", strings.Join(lines, "\n")+"\n"
		}
		if _, err := v.Put(ctx, "lumen", key, []byte(text), inspect.WriteOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		bl, err := v.Blame(ctx, "lumen", "", "skill.md")
		if err != nil || len(bl.Lines) != 200 {
			b.Fatalf("%d lines, %v", len(bl.Lines), err)
		}
	}
}
