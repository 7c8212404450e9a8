package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/termsafe"
	"github.com/urfave/cli/v2"
)

func newTagCommand(e *env) *cli.Command {
	return &cli.Command{Name: "tag", Usage: "name a commit to keep (forget and gc keep tagged commits); list or delete tags", ArgsUsage: "[NAME [REV]]",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "delete", Aliases: []string{"d"}, Usage: "delete tag NAME"},
			&cli.BoolFlag{Name: "force", Aliases: []string{"f"}, Usage: "move tag NAME if it already names another commit"}, jsonFlag()},
		Action: e.runTag}
}

func (e *env) runTag(c *cli.Context) error {
	if err := nargs(c, 0, 2); err != nil {
		return err
	}
	name := c.Args().First()
	if c.Bool("delete") {
		if c.NArg() != 1 {
			return usagef("tag -d NAME")
		}
		return e.withRepo(func(r *repo.Repo) error {
			ok, err := r.DeleteTag(e.ctx, e.agent, name)
			if err != nil {
				return err
			}
			if !ok {
				return &repo.NoTagError{Agent: e.agent, Name: name}
			}
			fmt.Fprintf(e.stdout, "deleted tag %s of %s\n", name, e.agent)
			return nil
		})
	}
	if name == "" {
		return e.withRepoRead(func(r *repo.Repo) error {
			tags, err := r.Tags(e.ctx, e.agent)
			if err != nil {
				return err
			}
			list := tags[e.agent]
			slices.SortFunc(list, func(a, b repo.Tag) int { return strings.Compare(a.Name, b.Name) })
			if c.Bool("json") {
				if list == nil {
					list = []repo.Tag{}
				}
				return e.writeJSON(list)
			}
			for _, t := range list {
				fmt.Fprintf(e.stdout, "%s\t%s\n", termsafe.Line(t.Name), t.Commit)
			}
			return nil
		})
	}
	return e.withRepo(func(r *repo.Repo) error {
		id, err := r.Resolve(e.ctx, e.agent, revArg(c, 1))
		if err != nil {
			return err
		}
		set := r.SetTag
		if c.Bool("force") {
			set = r.MoveTag
		}
		if err := set(e.ctx, e.agent, name, id); err != nil {
			if errors.Is(err, repo.ErrTagExists) {
				return fmt.Errorf("%w (tag -f %s %s moves it)", err, name, revArg(c, 1))
			}
			return err
		}
		fmt.Fprintf(e.stdout, "tagged %s of %s as %s\n", id.Short(), e.agent, name)
		return nil
	})
}
