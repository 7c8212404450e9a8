package cli

import "github.com/urfave/cli/v2"

// urfave/cli derives a flag's names from its Name and Aliases with a
// regular expression at every call of Names, and calls it for every flag
// each time it looks one up: for each flag of a command line before the
// command runs, and for each flag a command reads. That was a third of a
// served get's parse. The flags of a built command, and the library's help
// flag, are wrapped so that their names are their Name and Aliases, listed
// once (the regular expression only strips what follows a comma or a space
// in a name, and no name here has one: TestNamesOnce); everything else is
// the library's own flag, embedded.

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

func init() {
	if h, ok := cli.HelpFlag.(*cli.BoolFlag); ok {
		cli.HelpFlag = &boolNames{h, plainNames(h.Name, h.Aliases)}
	}
}

// plainNames is a flag's names: its name, then its aliases.
func plainNames(name string, aliases []string) []string {
	return append([]string{name}, aliases...)
}

// namesOnce wraps the flags in fs whose names it can keep.
func namesOnce(fs []cli.Flag) []cli.Flag {
	out := make([]cli.Flag, len(fs))
	for i, f := range fs {
		switch t := f.(type) {
		case *cli.BoolFlag:
			out[i] = &boolNames{t, plainNames(t.Name, t.Aliases)}
		case *cli.StringFlag:
			out[i] = &stringNames{t, plainNames(t.Name, t.Aliases)}
		case *cli.StringSliceFlag:
			out[i] = &stringSliceNames{t, plainNames(t.Name, t.Aliases)}
		case *cli.IntFlag:
			out[i] = &intNames{t, plainNames(t.Name, t.Aliases)}
		case *cli.Int64Flag:
			out[i] = &int64Names{t, plainNames(t.Name, t.Aliases)}
		case *cli.DurationFlag:
			out[i] = &durationNames{t, plainNames(t.Name, t.Aliases)}
		default:
			out[i] = f
		}
	}
	return out
}
