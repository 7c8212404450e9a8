package inspect

import (
	"context"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/objects"
)

// SplitRange splits a range "A..B" into its ends, as git reads one: the
// commits reachable from B and not from A; an empty end is HEAD. ok is
// false when rev is not a range. "A...B" (git's symmetric difference) is
// refused.
func SplitRange(rev string) (from, to string, ok bool, err error) {
	i := strings.Index(rev, "..")
	if i < 0 {
		return "", rev, false, nil
	}
	if strings.Contains(rev, "...") {
		return "", "", false, badf("%q: A...B is not supported; give A..B (the commits reachable from B and not from A)", rev)
	}
	from, to = rev[:i], rev[i+2:]
	if strings.Contains(to, "..") {
		return "", "", false, badf("%q: a range has one ..", rev)
	}
	if from == "" {
		from = "HEAD"
	}
	if to == "" {
		to = "HEAD"
	}
	return from, to, true, nil
}

// agoRE is compiled on first use: every process links this package, few
// parse a relative time.
var agoRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([0-9]{1,9}) +(second|minute|hour|day|week)s? +ago$`)
})

// ParseWhen reads a time as log's since and until bounds take it: RFC 3339
// ("2026-11-20T10:00:00Z"), a date ("2026-11-20", midnight UTC), or a
// time before now: "N second(s)|minute(s)|hour(s)|day(s)|week(s) ago".
func ParseWhen(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if m := agoRE().FindStringSubmatch(strings.ToLower(s)); m != nil {
		n, _ := strconv.Atoi(m[1])
		unit := map[string]time.Duration{"second": time.Second, "minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour, "week": 7 * 24 * time.Hour}[m[2]]
		if int64(n) > math.MaxInt64/int64(unit) {
			return time.Time{}, badf("time %.60q is too far back", s)
		}
		return now.Add(-time.Duration(n) * unit), nil
	}
	return time.Time{}, badf("time %.60q: give RFC 3339 (2026-11-20T10:00:00Z), a date (2026-11-20) or \"N days ago\" (seconds, minutes, hours, days, weeks)", s)
}

// logFilter is what LogOptions' filters keep: commits that match them all.
type logFilter struct {
	grep    string
	o       LogOptions
	exclude map[objects.CID]bool // reachable from a range's A
}

// newLogFilter checks o's filters and, for a range, walks what its A
// reaches (around the agent's cuts, as the log walks).
func (v *View) newLogFilter(ctx context.Context, agent string, o LogOptions, lo dag.LogOptions) (*logFilter, error) {
	f := &logFilter{grep: strings.ToLower(o.Grep), o: o}
	if o.Exclude == "" {
		return f, nil
	}
	a, _, err := v.resolve(ctx, agent, o.Exclude)
	if err != nil {
		return nil, err
	}
	f.exclude = map[objects.CID]bool{}
	for le, err := range dag.LogWith(ctx, v.R.Blocks, a, lo) {
		if err != nil {
			return nil, classify(err)
		}
		f.exclude[le.CID] = true
	}
	return f, nil
}

// checkLogFilters refuses filters no commit could be asked by.
func checkLogFilters(o LogOptions) error {
	if len(o.Grep) > MaxGrep {
		return badf("search text of %d bytes: at most %d", len(o.Grep), MaxGrep)
	}
	if len(o.Task) > MaxGrep {
		return badf("task id of %d bytes: at most %d", len(o.Task), MaxGrep)
	}
	for _, p := range o.Paths {
		if err := objects.ValidateKey(p); err != nil {
			return classify(err)
		}
	}
	if !o.Since.IsZero() && !o.Until.IsZero() && o.Until.Before(o.Since) {
		return badf("until (%s) is before since (%s)", o.Until.UTC().Format(time.RFC3339), o.Since.UTC().Format(time.RFC3339))
	}
	return nil
}

// keeps says whether the filters keep one commit of the walk.
func (f *logFilter) keeps(ctx context.Context, v *View, le dag.LogEntry) (bool, error) {
	cm, o := le.Commit, f.o
	if f.exclude[le.CID] {
		return false, nil
	}
	if !o.Since.IsZero() && cm.Time < o.Since.Unix() {
		return false, nil
	}
	if !o.Until.IsZero() && cm.Time > o.Until.Unix() {
		return false, nil
	}
	if o.Task != "" && cm.Metadata["task"] != o.Task {
		return false, nil
	}
	if f.grep != "" && !commitMatches(cm, f.grep) {
		return false, nil
	}
	paths := o.Paths
	if o.Path != "" {
		paths = append([]string{o.Path}, paths...)
	}
	if len(paths) == 0 {
		return true, nil
	}
	for _, p := range paths {
		ok, err := dag.EntryTouchesKey(ctx, v.R.Blocks, le, p)
		if err != nil || ok {
			return ok, classify(err)
		}
	}
	return false, nil
}
