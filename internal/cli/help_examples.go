package cli

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// examples are the examples each command's help ends with, by command
// (a subcommand as "trust add"; "" for agentstate --help). Every command
// has at least one (TestEveryCommandHelp).
var examples = map[string][]string{
	"":           {"agentstate init", "agentstate commit -m 'first' ./brain", "agentstate log --oneline", "agentstate help log"},
	"init":       {"agentstate init", "agentstate --store /srv/brains init"},
	"commit":     {"agentstate commit -m 'nightly' ./brain", "agentstate commit --meta model=opus --meta task=t-17 ./brain"},
	"put":        {"agentstate put skills/plan.md plan.md", "echo hello | agentstate put -m 'greet' notes/hello.txt -"},
	"get":        {"agentstate get skills/plan.md", "agentstate get skills/plan.md --at HEAD~2 > old-plan.md"},
	"rm":         {"agentstate rm notes/old.md -m 'drop old notes'"},
	"ls":         {"agentstate ls", "agentstate ls -l skills/", "agentstate ls --at release --json"},
	"log":        {"agentstate log -n 5 --oneline", "agentstate log HEAD~3 --path skills/plan.md", "agentstate log --tasks --agent lumen", "agentstate log release..HEAD --stat", "agentstate log -p --grep retry --since '2 days ago' -- skills/plan.md", "agentstate log --task t-17 --until 2026-11-20", "agentstate --no-pager log -p"},
	"show":       {"agentstate show HEAD", "agentstate show -p HEAD~1", "agentstate show HEAD:skills/plan.md", "agentstate show task:t-17"},
	"diff":       {"agentstate diff HEAD~1", "agentstate diff release HEAD -p", "agentstate diff HEAD~5 HEAD -- skills/plan.md", "agentstate diff release..HEAD --stat", "agentstate diff -p HEAD ./brain"},
	"blame":      {"agentstate blame skills/plan.md", "agentstate blame HEAD~2:skills/plan.md --json"},
	"sql":        {"agentstate sql memory.db 'SELECT count(*) FROM notes'", "agentstate sql --header HEAD~1:memory.db 'SELECT * FROM notes LIMIT 5'"},
	"checkout":   {"agentstate checkout HEAD ./brain", "agentstate checkout release ./brain --force"},
	"reset":      {"agentstate reset HEAD~1", "agentstate reset release"},
	"undo":       {"agentstate undo"},
	"redo":       {"agentstate redo"},
	"revert":     {"agentstate revert HEAD", "agentstate revert --dry-run task:t-17", "agentstate revert HEAD~2 -- skills/plan.md", "agentstate revert --row messages:8 task:t-17 -- memory.db"},
	"oplog":      {"agentstate oplog -n 10"},
	"fork":       {"agentstate fork lumen-experiment", "agentstate fork --from HEAD~3 lumen-before"},
	"agents":     {"agentstate agents", "agentstate agents --json"},
	"hash":       {"agentstate hash", "agentstate hash --dir ./brain"},
	"verify":     {"agentstate verify"},
	"gc":         {"agentstate gc"},
	"forget":     {"agentstate forget --keep-last 10 --keep-daily 7 --dry-run", "agentstate forget --keep-within 2w"},
	"tag":        {"agentstate tag", "agentstate tag release HEAD~1", "agentstate tag -d release"},
	"du":         {"agentstate du", "agentstate du -n 20"},
	"clone":      {"agentstate clone /srv/brains/.agentstate", "agentstate clone /srv/brains/.agentstate lumen nova"},
	"pull":       {"agentstate pull /srv/brains/.agentstate", "agentstate pull --agent lumen --from lumen-prod /srv/brains/.agentstate"},
	"send":       {"agentstate send /srv/brains/.agentstate", "agentstate send --to lumen-prod /srv/brains/.agentstate"},
	"mcp":        {"agentstate mcp", "agentstate --agent lumen mcp"},
	"redact":     {"agentstate redact skills/deploy.md --at HEAD~2 --reason 'leaked API key' --sign-key operator.key", "agentstate redact memory.db --all --reason 'user asked' --sign-key operator.key"},
	"redactions": {"agentstate redactions", "agentstate redactions --all-agents --json"},
	"receipts":   {"agentstate receipts", "agentstate receipts --file receipts.ndjson --pub operator.pub"},
	"trust":      {"agentstate trust ls", "agentstate trust add operator.pub"},
	"trust ls":   {"agentstate trust ls --json"},
	"trust add":  {"agentstate trust add operator.pub", "agentstate trust add --all-agents operator.pub"},
	"trust rm":   {"agentstate trust rm operator.pub"},
	"export":     {"agentstate export -o brain.tar", "agentstate export --format car -o brain.car HEAD~1"},
	"import":     {"agentstate import brain.tar", "agentstate import -m 'from backup' brain.car", "curl -s https://example.org/brain.tar | agentstate import -"},
	"keygen":     {"agentstate keygen -o snapshot.key"},
	"push":       {"agentstate push --key snapshot.key", "agentstate push -r age1... HEAD~1"},
	"restore":    {"agentstate restore --key snapshot.key", "agentstate restore --blob BLOB_ID --key snapshot.key"},
	"snapshots":  {"agentstate snapshots", "agentstate snapshots --json"},
	"serve":      {"agentstate serve", "agentstate serve --listen 127.0.0.1:7070 --token-file tokens.txt"},
	"use":        {"agentstate use lumen", "agentstate use"},
	"status":     {"agentstate status", "agentstate status --json", "agentstate status ./brain"},
	"help":       {"agentstate help", "agentstate help log", "agentstate help trust add"},
	"version":    {"agentstate version", "agentstate --version"},
	"completion": {"source <(agentstate completion bash)", "source <(agentstate completion zsh)", "agentstate completion fish | source"},
	"__complete": {"agentstate __complete --line 'agentstate log --a'"},
}

// withExamples makes cmd's help (and its subcommands') end with its
// examples, prefix naming its parent ("trust " for trust's subcommands).
func withExamples(cmd *cli.Command, prefix string) {
	name := prefix + cmd.Name
	if ex := examples[name]; len(ex) > 0 {
		tmpl := cli.CommandHelpTemplate
		if len(cmd.Subcommands) > 0 {
			tmpl = cli.SubcommandHelpTemplate
		}
		var b strings.Builder
		b.WriteString(strings.TrimRight(tmpl, "\n"))
		b.WriteString("\n\nEXAMPLES:\n")
		for _, e := range ex {
			b.WriteString("   " + strings.ReplaceAll(e, "{{", "{{`{{`}}") + "\n")
		}
		cmd.CustomHelpTemplate = b.String()
	}
	for _, s := range cmd.Subcommands {
		withExamples(s, name+" ")
	}
}
