package cli

import "github.com/urfave/cli/v2"

// urfave/cli derives a flag's names from its Name and Aliases with a
// regular expression at every call of Names, and calls it for every flag
// each time it looks one up: for each flag of a command line before the
// command runs, and for each flag a command reads. That was a third of a
// served get's parse. The flags of a built command are wrapped so that
// their names are worked out once; everything else is the library's own
// flag, embedded.

type (
	boolNames struct {
		*cli.BoolFlag
		names []string
	}
	stringNames struct {
		*cli.StringFlag
		names []string
	}
	stringSliceNames struct {
		*cli.StringSliceFlag
		names []string
	}
	intNames struct {
		*cli.IntFlag
		names []string
	}
	int64Names struct {
		*cli.Int64Flag
		names []string
	}
	durationNames struct {
		*cli.DurationFlag
		names []string
	}
)

func (f *boolNames) Names() []string        { return f.names }
func (f *stringNames) Names() []string      { return f.names }
func (f *stringSliceNames) Names() []string { return f.names }
func (f *intNames) Names() []string         { return f.names }
func (f *int64Names) Names() []string       { return f.names }
func (f *durationNames) Names() []string    { return f.names }

// namesOnce wraps the flags in fs whose names it can keep.
func namesOnce(fs []cli.Flag) []cli.Flag {
	out := make([]cli.Flag, len(fs))
	for i, f := range fs {
		switch t := f.(type) {
		case *cli.BoolFlag:
			out[i] = &boolNames{t, t.Names()}
		case *cli.StringFlag:
			out[i] = &stringNames{t, t.Names()}
		case *cli.StringSliceFlag:
			out[i] = &stringSliceNames{t, t.Names()}
		case *cli.IntFlag:
			out[i] = &intNames{t, t.Names()}
		case *cli.Int64Flag:
			out[i] = &int64Names{t, t.Names()}
		case *cli.DurationFlag:
			out[i] = &durationNames{t, t.Names()}
		default:
			out[i] = f
		}
	}
	return out
}
