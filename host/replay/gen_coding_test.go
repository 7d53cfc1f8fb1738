package replay

// The coding-agent session: a Claude-Code-shaped client (Anthropic Messages,
// streamed) fixing a bug and adding a feature in a small Go service. Every
// text below was written for this trace; the shapes (two cached system
// blocks, 19 tools with JSON schemas, <system-reminder> blocks in user
// turns, tool_use/tool_result rounds, a rolling breakpoint on the newest
// message) follow what Claude Code sends.

import (
	"fmt"
	"strings"
)

const codingIdentity = "You are Claude Code, Anthropic's official CLI for Claude."

const codingSystem = `You are an interactive command-line tool that helps users with software engineering tasks. Use the instructions below and the tools available to you to assist the user.

IMPORTANT: Assist with defensive security tasks only. Refuse to create, modify, or improve code that may be used maliciously. Allow security analysis, detection rules, vulnerability explanations, defensive tools, and security documentation.
IMPORTANT: You must NEVER generate or guess URLs for the user unless you are confident that the URLs are for helping the user with programming. You may use URLs provided by the user in their messages or local files.

If the user asks for help or wants to give feedback inform them of the following:
- /help: Get help with using the tool
- To give feedback, users should report the issue at the project's issue tracker

# Tone and style
You should be concise, direct, and to the point. Your output will be displayed on a command line interface. Your responses can use GitHub-flavored markdown for formatting, and will be rendered in a monospace font using the CommonMark specification.
Output text to communicate with the user; all text you output outside of tool use is displayed to the user. Only use tools to complete tasks. Never use tools like Bash or code comments as means to communicate with the user during the session.
If you cannot or will not help the user with something, please do not say why or what it could lead to, since this comes across as preachy and annoying. Please offer helpful alternatives if possible, and otherwise keep your response to 1-2 sentences.
Only use emojis if the user explicitly requests it. Avoid using emojis in all communication unless asked.
IMPORTANT: You should minimize output tokens as much as possible while maintaining helpfulness, quality, and accuracy. Only address the specific query or task at hand, avoiding tangential information unless absolutely critical for completing the request. If you can answer in 1-3 sentences or a short paragraph, please do.
IMPORTANT: You should NOT answer with unnecessary preamble or postamble (such as explaining your code or summarizing your action), unless the user asks you to.
Answer the user's question directly, without elaboration, explanation, or details. One word answers are best. Avoid introductions, conclusions, and explanations.

# Proactiveness
You are allowed to be proactive, but only when the user asks you to do something. You should strive to strike a balance between:
- Doing the right thing when asked, including taking actions and follow-up actions
- Not surprising the user with actions you take without asking
For example, if the user asks you how to approach something, you should do your best to answer their question first, and not immediately jump into taking actions.

# Following conventions
When making changes to files, first understand the file's code conventions. Mimic code style, use existing libraries and utilities, and follow existing patterns.
- NEVER assume that a given library is available, even if it is well known. Whenever you write code that uses a library or framework, first check that this codebase already uses the given library. For example, you might look at neighboring files, or check the go.mod (or package.json, or cargo.toml, and so on depending on the language).
- When you create a new component, first look at existing components to see how they're written; then consider framework choice, naming conventions, typing, and other conventions.
- When you edit a piece of code, first look at the code's surrounding context (especially its imports) to understand the code's choice of frameworks and libraries. Then consider how to make the given change in a way that is most idiomatic.
- Always follow security best practices. Never introduce code that exposes or logs secrets and keys. Never commit secrets or keys to the repository.

# Code style
- IMPORTANT: DO NOT ADD ***ANY*** COMMENTS unless asked

# Task Management
You have access to the TodoWrite tool to help you manage and plan tasks. Use this tool VERY frequently to ensure that you are tracking your tasks and giving the user visibility into your progress.
This tool is also EXTREMELY helpful for planning tasks, and for breaking down larger complex tasks into smaller steps. If you do not use this tool when planning, you may forget to do important tasks - and that is unacceptable.
It is critical that you mark todos as completed as soon as you are done with a task. Do not batch up multiple tasks before marking them as completed.

# Doing tasks
The user will primarily request you perform software engineering tasks. This includes solving bugs, adding new functionality, refactoring code, explaining code, and more. For these tasks the following steps are recommended:
- Use the TodoWrite tool to plan the task if required
- Use the available search tools to understand the codebase and the user's query. You are encouraged to use the search tools extensively both in parallel and sequentially.
- Implement the solution using all tools available to you
- Verify the solution if possible with tests. NEVER assume specific test framework or test script. Check the README or search codebase to determine the testing approach.
- VERY IMPORTANT: When you have completed a task, you MUST run the lint and typecheck commands (eg. go vet, npm run lint, ruff) with Bash if they were provided to you to ensure your code is correct. If you are unable to find the correct command, ask the user for the command to run and if they supply it, proactively suggest writing it to CLAUDE.md so that you will know to run it next time.
NEVER commit changes unless the user explicitly asks you to. It is VERY IMPORTANT to only commit when explicitly asked, otherwise the user will feel that you are being too proactive.

- Tool results and user messages may include <system-reminder> tags. <system-reminder> tags contain useful information and reminders. They are automatically added by the system, and bear no direct relation to the specific tool results or user messages in which they appear.

# Tool usage policy
- When doing file search, prefer to use the Task tool in order to reduce context usage.
- You should proactively use the Task tool with specialized agents when the task at hand matches the agent's description.
- When WebFetch returns a message about a redirect to a different host, you should immediately make a new WebFetch request with the redirect URL provided in the response.
- You have the capability to call multiple tools in a single response. When multiple independent pieces of information are requested, batch your tool calls together for optimal performance. When making multiple bash tool calls, you MUST send a single message with multiple tools calls to run the calls in parallel.
- Use specialized tools instead of bash commands when possible, as this provides a better user experience. For file operations, use dedicated tools: Read for reading files instead of cat/head/tail, Edit for editing instead of sed/awk, and Write for creating files instead of cat with heredoc or echo redirection. Reserve bash tools exclusively for actual system commands and terminal operations that require shell execution.

# Committing changes with git
When the user asks you to create a new git commit, follow these steps carefully:
1. Run git status to see all untracked files, git diff to see both staged and unstaged changes that will be committed, and git log to see recent commit messages so that you can follow this repository's commit message style.
2. Analyze all staged changes (both previously staged and newly added) and draft a commit message: summarize the nature of the changes (eg. new feature, enhancement to an existing feature, bug fix, refactoring, test, docs), check for any sensitive information that shouldn't be committed, and draft a concise (1-2 sentences) commit message that focuses on the "why" rather than the "what".
3. Add relevant untracked files to the staging area, create the commit, and run git status after the commit completes to verify success.
4. If the commit fails due to pre-commit hook changes, retry the commit ONCE to include these automated changes. If it fails again, it usually means a pre-commit hook is preventing the commit.
Important notes:
- NEVER update the git config
- NEVER run additional commands to read or explore code, besides git bash commands
- DO NOT push to the remote repository unless the user explicitly asks you to do so
- IMPORTANT: Never use git commands with the -i flag (like git rebase -i or git add -i) since they require interactive input which is not supported.

# Code References
When referencing specific functions or pieces of code include the pattern file_path:line_number to allow the user to easily navigate to the source code location.

Here is useful information about the environment you are running in:
<env>
Working directory: /home/dev/src/ledgerd
Is directory a git repo: Yes
Platform: linux
OS Version: Linux 6.8.0-49-generic
Today's date: 2026-11-26
</env>
You are powered by the model named Sonnet 4.5. The exact model ID is claude-sonnet-4-5.

gitStatus: This is the git status at the start of the conversation. Note that this status is a snapshot in time, and will not update during the conversation.
Current branch: fix/empty-balances

Main branch (you will usually use this for PRs): main

Status:
(clean)

Recent commits:
9c1e2f4 store: index transactions by account and time
51aa0d7 api: return balances in minor units
0b7d3e8 ci: run go vet and staticcheck
e44a9c1 ledger: reject transfers between the same account
7f20ab6 initial import`

// codingTool is one tool definition: name, description and the JSON schema's
// properties (all strings unless given), required first.
type codingTool struct {
	name, desc string
	props      []string // "name:type:description"
	required   []string
}

var codingTools = []codingTool{
	{"Task", "Launch a new agent to handle complex, multi-step tasks autonomously. Available agent types: general-purpose (researching complex questions, searching for code, and executing multi-step tasks; when you are searching for a keyword or file and are not confident that you will find the right match in the first few tries use this agent), statusline-setup (configure the user's status line setting), output-style-setup (create an output style). When using the Task tool, you must specify a subagent_type parameter to select which agent type to use. Launch multiple agents concurrently whenever possible; the agent's outputs should generally be trusted; clearly tell the agent whether you expect it to write code or just to do research, since it is not aware of the user's intent.",
		[]string{"description:string:A short (3-5 word) description of the task", "prompt:string:The task for the agent to perform", "subagent_type:string:The type of specialized agent to use for this task"}, []string{"description", "prompt", "subagent_type"}},
	{"Bash", "Executes a given bash command in a persistent shell session with optional timeout, ensuring proper handling and security measures. Before executing the command, verify the parent directory exists when the command creates files. Always quote file paths that contain spaces with double quotes. The command argument is required; you can specify an optional timeout in milliseconds (up to 600000ms / 10 minutes), 120000ms by default. It is very helpful if you write a clear, concise description of what this command does in 5-10 words. If the output exceeds 30000 characters, output will be truncated before being returned to you. You can use the run_in_background parameter to run the command in the background, which allows you to continue working while the command runs; you can monitor the output using the BashOutput tool as it becomes available. Avoid using Bash with the find, grep, cat, head, tail, sed, awk, or echo commands, unless explicitly instructed or when these commands are truly necessary for the task. When issuing multiple commands: if they are independent, make multiple Bash tool calls in a single message; if they depend on each other, use && to chain them. Try to maintain your current working directory throughout the session by using absolute paths and avoiding usage of cd.",
		[]string{"command:string:The command to execute", "timeout:number:Optional timeout in milliseconds (max 600000)", "description:string:Clear, concise description of what this command does in 5-10 words", "run_in_background:boolean:Set to true to run this command in the background"}, []string{"command"}},
	{"Glob", "Fast file pattern matching tool that works with any codebase size. Supports glob patterns like \"**/*.js\" or \"src/**/*.ts\". Returns matching file paths sorted by modification time. Use this tool when you need to find files by name patterns. When you are doing an open ended search that may require multiple rounds of globbing and grepping, use the Agent tool instead. It is always better to speculatively perform multiple searches in parallel if they are potentially useful.",
		[]string{"pattern:string:The glob pattern to match files against", "path:string:The directory to search in. If not specified, the current working directory will be used."}, []string{"pattern"}},
	{"Grep", "A powerful search tool built on ripgrep. ALWAYS use Grep for search tasks; NEVER invoke grep or rg as a Bash command. Supports full regex syntax (e.g. \"log.*Error\", \"function\\s+\\w+\"). Filter files with the glob parameter (e.g. \"*.js\", \"**/*.tsx\") or the type parameter (e.g. \"js\", \"py\", \"rust\"). Output modes: \"content\" shows matching lines, \"files_with_matches\" shows only file paths (default), \"count\" shows match counts. Use the Task tool for open-ended searches requiring multiple rounds. Pattern syntax uses ripgrep (not grep): literal braces need escaping. Multiline matching: by default patterns match within single lines only; for cross-line patterns use multiline: true.",
		[]string{"pattern:string:The regular expression pattern to search for in file contents", "path:string:File or directory to search in (rg PATH). Defaults to current working directory.", "glob:string:Glob pattern to filter files", "output_mode:string:Output mode: content, files_with_matches or count", "-n:boolean:Show line numbers in output", "-i:boolean:Case insensitive search", "type:string:File type to search", "head_limit:number:Limit output to first N lines/entries", "multiline:boolean:Enable multiline mode"}, []string{"pattern"}},
	{"ExitPlanMode", "Use this tool when you are in plan mode and have finished presenting your plan and are ready to code. This will prompt the user to exit plan mode. IMPORTANT: Only use this tool when the task requires planning the implementation steps of a task that requires writing code. For research tasks where you are gathering information, searching files, reading files or in general trying to understand the codebase, do NOT use this tool.",
		[]string{"plan:string:The plan you came up with, that you want to run by the user for approval. Supports markdown."}, []string{"plan"}},
	{"Read", "Reads a file from the local filesystem. You can access any file directly by using this tool. Assume this tool is able to read all files on the machine. If the User provides a path to a file assume that path is valid. It is okay to read a file that does not exist; an error will be returned. The file_path parameter must be an absolute path, not a relative path. By default, it reads up to 2000 lines starting from the beginning of the file. You can optionally specify a line offset and limit (especially handy for long files), but it's recommended to read the whole file by not providing these parameters. Any lines longer than 2000 characters will be truncated. Results are returned using cat -n format, with line numbers starting at 1. This tool can read images, PDF files and Jupyter notebooks. You can call multiple tools in a single response; it is always better to speculatively read multiple files as a batch that are potentially useful.",
		[]string{"file_path:string:The absolute path to the file to read", "offset:number:The line number to start reading from", "limit:number:The number of lines to read"}, []string{"file_path"}},
	{"Edit", "Performs exact string replacements in files. You must use your Read tool at least once in the conversation before editing. This tool will error if you attempt an edit without reading the file. When editing text from Read tool output, ensure you preserve the exact indentation (tabs/spaces) as it appears AFTER the line number prefix. ALWAYS prefer editing existing files in the codebase. NEVER write new files unless explicitly required. The edit will FAIL if old_string is not unique in the file. Either provide a larger string with more surrounding context to make it unique or use replace_all to change every instance of old_string.",
		[]string{"file_path:string:The absolute path to the file to modify", "old_string:string:The text to replace", "new_string:string:The text to replace it with (must be different from old_string)", "replace_all:boolean:Replace all occurences of old_string (default false)"}, []string{"file_path", "old_string", "new_string"}},
	{"MultiEdit", "This is a tool for making multiple edits to a single file in one operation. It is built on top of the Edit tool and allows you to perform multiple find-and-replace operations efficiently. Prefer this tool over the Edit tool when you need to make multiple edits to the same file. All edits are applied in sequence, in the order they are provided; each edit operates on the result of the previous edit; all edits must be valid for the operation to succeed - if any edit fails, none will be applied.",
		[]string{"file_path:string:The absolute path to the file to modify", "edits:array:Array of edit operations to perform sequentially on the file"}, []string{"file_path", "edits"}},
	{"Write", "Writes a file to the local filesystem. This tool will overwrite the existing file if there is one at the provided path. If this is an existing file, you MUST use the Read tool first to read the file's contents. ALWAYS prefer editing existing files in the codebase. NEVER write new files unless explicitly required. NEVER proactively create documentation files (*.md) or README files.",
		[]string{"file_path:string:The absolute path to the file to write (must be absolute, not relative)", "content:string:The content to write to the file"}, []string{"file_path", "content"}},
	{"NotebookEdit", "Completely replaces the contents of a specific cell in a Jupyter notebook (.ipynb file) with new source. The notebook_path parameter must be an absolute path. The cell_number is 0-indexed. Use edit_mode=insert to add a new cell at the index specified by cell_number. Use edit_mode=delete to delete the cell at the index specified by cell_number.",
		[]string{"notebook_path:string:The absolute path to the Jupyter notebook file to edit", "cell_id:string:The ID of the cell to edit", "new_source:string:The new source for the cell", "cell_type:string:The type of the cell (code or markdown)", "edit_mode:string:The type of edit to make (replace, insert, delete)"}, []string{"notebook_path", "new_source"}},
	{"WebFetch", "Fetches content from a specified URL and processes it using an AI model. Takes a URL and a prompt as input, fetches the URL content, converts HTML to markdown, processes the content with the prompt using a small, fast model and returns the model's response about the content. The URL must be a fully-formed valid URL; HTTP URLs will be automatically upgraded to HTTPS. This tool is read-only and does not modify any files. Results may be summarized if the content is very large. Includes a self-cleaning 15-minute cache for faster responses when repeatedly accessing the same URL.",
		[]string{"url:string:The URL to fetch content from", "prompt:string:The prompt to run on the fetched content"}, []string{"url", "prompt"}},
	{"TodoWrite", "Use this tool to create and manage a structured task list for your current coding session. This helps you track progress, organize complex tasks, and demonstrate thoroughness to the user. Use it for complex multi-step tasks (3 or more distinct steps), when the user provides multiple tasks, after receiving new instructions, when you start working on a task (mark it in_progress; only one task at a time) and after completing a task (mark it completed). Skip it for a single, straightforward task or a purely conversational request. Task states: pending, in_progress, completed. Each task has content (imperative form) and activeForm (present continuous form).",
		[]string{"todos:array:The updated todo list"}, []string{"todos"}},
	{"WebSearch", "Allows Claude to search the web and use the results to inform responses. Provides up-to-date information for current events and recent data. Returns search result information formatted as search result blocks. Use this tool for accessing information beyond Claude's knowledge cutoff. Domain filtering is supported to include or block specific websites. Web search is only available in the US.",
		[]string{"query:string:The search query to use", "allowed_domains:array:Only include search results from these domains", "blocked_domains:array:Never include search results from these domains"}, []string{"query"}},
	{"BashOutput", "Retrieves output from a running or completed background bash shell. Takes a shell_id parameter identifying the shell. Always returns only new output since the last check, along with command status. Supports optional regex filtering to show only lines matching a pattern. Use this tool when you need to monitor or check the output of a long-running shell.",
		[]string{"bash_id:string:The ID of the background shell to retrieve output from", "filter:string:Optional regular expression to filter the output lines"}, []string{"bash_id"}},
	{"KillShell", "Kills a running background bash shell by its ID. Takes a shell_id parameter identifying the shell to kill. Returns a success or failure status. Use this tool when you need to terminate a long-running shell.",
		[]string{"shell_id:string:The ID of the background shell to kill"}, []string{"shell_id"}},
	{"SlashCommand", "Execute a slash command within the main conversation. When the user requests you to execute a slash command, use this tool to invoke the corresponding command. Only custom slash commands that appear in Available Commands are supported; do not invoke a command that is already running.",
		[]string{"command:string:The slash command to execute with its arguments, e.g. \"/review-pr 123\""}, []string{"command"}},
	{"AskUserQuestion", "Use this tool when you need to ask the user questions during execution. This allows you to gather user preferences or requirements, clarify ambiguous instructions, get decisions on implementation choices as you work, and offer choices to the user about what direction to take. Users will always be able to select \"Other\" to provide custom text input.",
		[]string{"questions:array:Questions to ask the user (1-4 questions)"}, []string{"questions"}},
	{"Skill", "Execute a skill within the main conversation. When users ask you to perform tasks, check if any of the available skills can help complete the task more effectively. Skills provide specialized capabilities and domain knowledge. Only use skills listed in the available skills; do not invoke a skill that is already running.",
		[]string{"skill:string:The skill name (no arguments)"}, []string{"skill"}},
	{"ListMcpResourcesTool", "Lists available resources from configured MCP servers. Each resource object includes a 'server' field indicating which server it's from.",
		[]string{"server:string:Optional server name to filter resources by"}, nil},
}

func (t codingTool) json() map[string]any {
	props := map[string]any{}
	for _, p := range t.props {
		f := strings.SplitN(p, ":", 3)
		prop := map[string]any{"type": f[1], "description": f[2]}
		if f[1] == "array" {
			prop["items"] = map[string]any{"type": "object"}
		}
		props[f[0]] = prop
	}
	schema := map[string]any{"type": "object", "properties": props, "additionalProperties": false,
		"$schema": "http://json-schema.org/draft-07/schema#"}
	if len(t.required) > 0 {
		schema["required"] = t.required
	}
	return map[string]any{"name": t.name, "description": t.desc, "input_schema": schema}
}

const claudeMD = `<system-reminder>
As you answer the user's questions, you can use the following context:
# claudeMd
Codebase and user instructions are shown below. Be sure to adhere to these instructions. IMPORTANT: These instructions OVERRIDE any default behavior and you MUST follow them exactly as written.

Contents of /home/dev/src/ledgerd/CLAUDE.md (project instructions, checked into the codebase):

# ledgerd
A double-entry ledger service. Go 1.24, net/http, PostgreSQL through pgx.
- Build: go build ./...
- Test: go test ./... (needs LEDGERD_TEST_DSN for store tests; they skip without it)
- Lint: go vet ./... && staticcheck ./...
- Money is int64 minor units, never float. Currencies are ISO 4217 codes.
- Handlers return errors through api.writeError; never http.Error.
- Every bug fix gets a regression test in the package it fixes.

      IMPORTANT: this context may or may not be relevant to your tasks. You should not respond to this context unless it is highly relevant to your task.
</system-reminder>`

const todoReminder = `<system-reminder>
This is a reminder that your todo list is currently empty. DO NOT mention this to the user explicitly because they are already aware. If you are working on tasks that would benefit from a todo list please use the TodoWrite tool to create one. If not, please feel free to ignore. Again do not mention this message to the user.
</system-reminder>`

// Files the session reads, numbered like the Read tool returns them.
const handlerGo = `package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"ledgerd/ledger"
	"ledgerd/store"
)

// Server serves the ledger's HTTP API.
type Server struct {
	Store *store.Store
	Log   Logger
}

func (s *Server) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/accounts/{id}", s.getAccount)
	mux.HandleFunc("GET /v1/accounts/{id}/balances", s.getBalances)
	mux.HandleFunc("GET /v1/accounts/{id}/transactions", s.listTransactions)
	mux.HandleFunc("POST /v1/transfers", s.postTransfer)
}

func (s *Server) getAccount(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_account", "account id must be an integer")
		return
	}
	acct, err := s.Store.Account(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, http.StatusNotFound, "not_found", "no such account")
		return
	}
	if err != nil {
		s.Log.Error("account", "id", id, "err", err)
		writeError(w, http.StatusInternalServerError, "internal", "internal error")
		return
	}
	writeJSON(w, http.StatusOK, acct)
}

func (s *Server) getBalances(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_account", "account id must be an integer")
		return
	}
	rows, err := s.Store.Balances(r.Context(), id)
	if err != nil {
		s.Log.Error("balances", "id", id, "err", err)
		writeError(w, http.StatusInternalServerError, "internal", "internal error")
		return
	}
	out := make([]balanceJSON, 0, len(rows))
	for _, b := range rows {
		out = append(out, balanceJSON{Currency: b.Currency, Minor: b.Minor, AsOf: b.AsOf.UTC().Format(timeFormat)})
	}
	writeJSON(w, http.StatusOK, map[string]any{"account": id, "balances": out})
}

func (s *Server) listTransactions(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_account", "account id must be an integer")
		return
	}
	txs, err := s.Store.Transactions(r.Context(), id)
	if err != nil {
		s.Log.Error("transactions", "id", id, "err", err)
		writeError(w, http.StatusInternalServerError, "internal", "internal error")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"account": id, "transactions": txs})
}

func (s *Server) postTransfer(w http.ResponseWriter, r *http.Request) {
	var req ledger.Transfer
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_body", err.Error())
		return
	}
	if err := req.Validate(); err != nil {
		writeError(w, http.StatusUnprocessableEntity, "invalid_transfer", err.Error())
		return
	}
	tx, err := s.Store.Apply(r.Context(), req)
	if err != nil {
		s.Log.Error("transfer", "err", err)
		writeError(w, http.StatusInternalServerError, "internal", "internal error")
		return
	}
	writeJSON(w, http.StatusCreated, tx)
}`

const storeGo = `package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"ledgerd/ledger"
)

// ErrNotFound is returned when a row does not exist.
var ErrNotFound = errors.New("store: not found")

// Store is the ledger's PostgreSQL storage.
type Store struct{ db *pgxpool.Pool }

// Balance is an account's balance in one currency.
type Balance struct {
	Currency string
	Minor    int64
	AsOf     time.Time
}

func New(db *pgxpool.Pool) *Store { return &Store{db: db} }

func (s *Store) Account(ctx context.Context, id int64) (ledger.Account, error) {
	var a ledger.Account
	err := s.db.QueryRow(ctx, "SELECT id, name, created_at FROM accounts WHERE id = $1", id).Scan(&a.ID, &a.Name, &a.Created)
	if errors.Is(err, pgx.ErrNoRows) {
		return a, ErrNotFound
	}
	return a, err
}

// Balances sums an account's postings per currency.
func (s *Store) Balances(ctx context.Context, id int64) ([]Balance, error) {
	rows, err := s.db.Query(ctx, "SELECT currency, SUM(amount_minor), MAX(posted_at) FROM postings WHERE account_id = $1 GROUP BY currency ORDER BY currency", id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Balance
	for rows.Next() {
		var b Balance
		if err := rows.Scan(&b.Currency, &b.Minor, &b.AsOf); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		return nil, ErrNotFound
	}
	return out, rows.Err()
}

// Transactions lists an account's transactions, newest first.
func (s *Store) Transactions(ctx context.Context, id int64) ([]ledger.Tx, error) {
	rows, err := s.db.Query(ctx, "SELECT t.id, t.kind, t.memo, t.created_at FROM transactions t JOIN postings p ON p.tx_id = t.id WHERE p.account_id = $1 ORDER BY t.created_at DESC, t.id DESC", id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ledger.Tx
	for rows.Next() {
		var t ledger.Tx
		if err := rows.Scan(&t.ID, &t.Kind, &t.Memo, &t.Created); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// Apply records a transfer as one transaction with two postings.
func (s *Store) Apply(ctx context.Context, tr ledger.Transfer) (ledger.Tx, error) {
	var tx ledger.Tx
	err := pgx.BeginFunc(ctx, s.db, func(dbtx pgx.Tx) error {
		if err := dbtx.QueryRow(ctx, "INSERT INTO transactions (kind, memo) VALUES ('transfer', $1) RETURNING id, kind, memo, created_at", tr.Memo).Scan(&tx.ID, &tx.Kind, &tx.Memo, &tx.Created); err != nil {
			return err
		}
		for _, p := range tr.Postings() {
			if _, err := dbtx.Exec(ctx, "INSERT INTO postings (tx_id, account_id, currency, amount_minor) VALUES ($1, $2, $3, $4)", tx.ID, p.Account, p.Currency, p.Minor); err != nil {
				return err
			}
		}
		return nil
	})
	return tx, err
}`

const handlerTestGo = `package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"ledgerd/store/storetest"
)

func TestGetAccount(t *testing.T) {
	srv := newTestServer(t)
	acct := storetest.Account(t, srv.Store, "alice")
	rec := httptest.NewRecorder()
	srv.mux.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/accounts/"+acct.IDString(), nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "alice") {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}

func TestGetBalances(t *testing.T) {
	srv := newTestServer(t)
	a := storetest.Account(t, srv.Store, "alice")
	b := storetest.Account(t, srv.Store, "bob")
	storetest.Transfer(t, srv.Store, a, b, "EUR", 1250)
	rec := httptest.NewRecorder()
	srv.mux.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/accounts/"+b.IDString()+"/balances", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "\"minor\":1250") {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}

func TestPostTransferRejectsUnknownFields(t *testing.T) {
	srv := newTestServer(t)
	rec := httptest.NewRecorder()
	srv.mux.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/transfers", strings.NewReader("{\"from\":1,\"to\":2,\"amount\":3,\"bogus\":true}")))
	if rec.Code != http.StatusBadRequest {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}`

// numbered renders file text the way the Read tool returns it.
func numbered(src string) string {
	var b strings.Builder
	for i, line := range strings.Split(src, "\n") {
		fmt.Fprintf(&b, "%6d\u2192%s\n", i+1, line)
	}
	return b.String()
}

// codingSession builds the coding trace.
func codingSession() Trace {
	tools := make([]any, len(codingTools))
	for i, t := range codingTools {
		tools[i] = t.json()
	}
	base := map[string]any{
		"model":      "claude-sonnet-4-5",
		"max_tokens": 32000,
		"stream":     true,
		"system": []any{
			map[string]any{"type": "text", "text": codingIdentity, "cache_control": map[string]any{"type": "ephemeral"}},
			map[string]any{"type": "text", "text": codingSystem, "cache_control": map[string]any{"type": "ephemeral"}},
		},
		"tools":    tools,
		"metadata": map[string]any{"user_id": "user_5f1c0d2e9a7b4c3d8e6f0a1b2c3d4e5f_account__session_3b9d2c71-5e8a-4f06-9c1d-7a2e4b6f8c90"},
	}
	c := &conv{}
	// 1. The bug report.
	c.user(0, claudeMD, todoReminder, "GET /v1/accounts/{id}/balances returns 500 for an account that has no transactions yet. It should return an empty list. Fix it and add a regression test.")
	c.toolUse(6, "I'll find where balances are served.", "Grep", map[string]any{"pattern": "Balances\\(", "output_mode": "content", "-n": true},
		"api/handler.go:51:\trows, err := s.Store.Balances(r.Context(), id)\nstore/store.go:39:func (s *Store) Balances(ctx context.Context, id int64) ([]Balance, error) {\nstore/store_test.go:22:\tgot, err := s.Balances(ctx, a.ID)")
	c.toolUse(4, "", "Read", map[string]any{"file_path": "/home/dev/src/ledgerd/api/handler.go"}, numbered(handlerGo))
	c.toolUse(5, "", "Read", map[string]any{"file_path": "/home/dev/src/ledgerd/store/store.go"}, numbered(storeGo))
	c.toolUse(9, "The store returns ErrNotFound when an account has no postings, and the handler turns every error into a 500. I'll track the steps.", "TodoWrite",
		map[string]any{"todos": []any{
			map[string]any{"content": "Return an empty slice from Store.Balances when there are no postings", "status": "in_progress", "activeForm": "Fixing Store.Balances"},
			map[string]any{"content": "Return 404 from getBalances for an unknown account", "status": "pending", "activeForm": "Handling unknown accounts"},
			map[string]any{"content": "Add regression tests", "status": "pending", "activeForm": "Adding regression tests"},
			map[string]any{"content": "Run go vet and the tests", "status": "pending", "activeForm": "Running vet and tests"}}},
		"Todos have been modified successfully. Ensure that you continue to use the todo list to track your progress. Please proceed with the current tasks if applicable")
	c.toolUse(7, "", "Edit", map[string]any{"file_path": "/home/dev/src/ledgerd/store/store.go",
		"old_string": "\tif len(out) == 0 {\n\t\treturn nil, ErrNotFound\n\t}\n\treturn out, rows.Err()",
		"new_string": "\tif err := rows.Err(); err != nil {\n\t\treturn nil, err\n\t}\n\tif out == nil {\n\t\tout = []Balance{}\n\t}\n\treturn out, nil"},
		"The file /home/dev/src/ledgerd/store/store.go has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n    50\t\t\treturn nil, err\n    51\t\t}\n    52\t\tout = append(out, b)\n    53\t}\n    54\tif err := rows.Err(); err != nil {\n    55\t\treturn nil, err\n    56\t}\n    57\tif out == nil {\n    58\t\tout = []Balance{}\n    59\t}\n    60\treturn out, nil\n    61}")
	c.toolUse(6, "Now an unknown account should be a 404, not an empty list.", "Edit", map[string]any{"file_path": "/home/dev/src/ledgerd/api/handler.go",
		"old_string": "\trows, err := s.Store.Balances(r.Context(), id)\n\tif err != nil {\n\t\ts.Log.Error(\"balances\"",
		"new_string": "\tif _, err := s.Store.Account(r.Context(), id); errors.Is(err, store.ErrNotFound) {\n\t\twriteError(w, http.StatusNotFound, \"not_found\", \"no such account\")\n\t\treturn\n\t}\n\trows, err := s.Store.Balances(r.Context(), id)\n\tif err != nil {\n\t\ts.Log.Error(\"balances\""},
		"The file /home/dev/src/ledgerd/api/handler.go has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n    45\t\t\treturn\n    46\t\t}\n    47\t\tif _, err := s.Store.Account(r.Context(), id); errors.Is(err, store.ErrNotFound) {\n    48\t\t\twriteError(w, http.StatusNotFound, \"not_found\", \"no such account\")\n    49\t\t\treturn\n    50\t\t}\n    51\t\trows, err := s.Store.Balances(r.Context(), id)")
	c.toolUse(5, "", "Read", map[string]any{"file_path": "/home/dev/src/ledgerd/api/handler_test.go"}, numbered(handlerTestGo))
	c.toolUse(8, "", "Edit", map[string]any{"file_path": "/home/dev/src/ledgerd/api/handler_test.go",
		"old_string": "func TestPostTransferRejectsUnknownFields(t *testing.T) {",
		"new_string": "func TestGetBalancesNoTransactions(t *testing.T) {\n\tsrv := newTestServer(t)\n\ta := storetest.Account(t, srv.Store, \"carol\")\n\trec := httptest.NewRecorder()\n\tsrv.mux.ServeHTTP(rec, httptest.NewRequest(\"GET\", \"/v1/accounts/\"+a.IDString()+\"/balances\", nil))\n\tif rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), \"\\\"balances\\\":[]\") {\n\t\tt.Fatalf(\"%d %s\", rec.Code, rec.Body)\n\t}\n}\n\nfunc TestGetBalancesUnknownAccount(t *testing.T) {\n\tsrv := newTestServer(t)\n\trec := httptest.NewRecorder()\n\tsrv.mux.ServeHTTP(rec, httptest.NewRequest(\"GET\", \"/v1/accounts/987654/balances\", nil))\n\tif rec.Code != http.StatusNotFound {\n\t\tt.Fatalf(\"%d %s\", rec.Code, rec.Body)\n\t}\n}\n\nfunc TestPostTransferRejectsUnknownFields(t *testing.T) {"},
		"The file /home/dev/src/ledgerd/api/handler_test.go has been updated.")
	c.toolUse(12, "", "Bash", map[string]any{"command": "cd /home/dev/src/ledgerd && go test ./api/ ./store/ 2>&1 | tail -30", "description": "Run the api and store tests"},
		"--- FAIL: TestGetBalancesNoTransactions (0.04s)\n    handler_test.go:37: 200 {\"account\":41,\"balances\":null}\nFAIL\nFAIL\tledgerd/api\t0.412s\nok  \tledgerd/store\t1.873s\nFAIL")
	c.toolUse(7, "The handler copies into a slice made with make, so null means rows came back nil from a different path. The test server uses the in-memory store.", "Grep",
		map[string]any{"pattern": "func \\(m \\*Mem\\) Balances", "output_mode": "content", "-n": true, "path": "/home/dev/src/ledgerd/store"},
		"store/memstore.go:88:func (m *Mem) Balances(ctx context.Context, id int64) ([]Balance, error) {")
	c.toolUse(4, "", "Read", map[string]any{"file_path": "/home/dev/src/ledgerd/store/memstore.go", "offset": 80, "limit": 40},
		numbered("\n// Mem is an in-memory Store for tests.\ntype Mem struct {\n\tmu       sync.Mutex\n\taccounts map[int64]ledger.Account\n\tpostings []posting\n}\n\nfunc (m *Mem) Balances(ctx context.Context, id int64) ([]Balance, error) {\n\tm.mu.Lock()\n\tdefer m.mu.Unlock()\n\tsums := map[string]*Balance{}\n\tfor _, p := range m.postings {\n\t\tif p.account != id {\n\t\t\tcontinue\n\t\t}\n\t\tb := sums[p.currency]\n\t\tif b == nil {\n\t\t\tb = &Balance{Currency: p.currency}\n\t\t\tsums[p.currency] = b\n\t\t}\n\t\tb.Minor += p.minor\n\t\tif p.at.After(b.AsOf) {\n\t\t\tb.AsOf = p.at\n\t\t}\n\t}\n\tvar out []Balance\n\tfor _, b := range sums {\n\t\tout = append(out, *b)\n\t}\n\tsort.Slice(out, func(i, j int) bool { return out[i].Currency < out[j].Currency })\n\treturn out, nil\n}"))
	c.toolUse(6, "", "Read", map[string]any{"file_path": "/home/dev/src/ledgerd/api/json.go"},
		numbered("package api\n\nimport (\n\t\"encoding/json\"\n\t\"net/http\"\n)\n\nconst timeFormat = \"2006-01-02T15:04:05Z\"\n\ntype balanceJSON struct {\n\tCurrency string\n\tMinor    int64\n\tAsOf     string\n}\n\nfunc writeJSON(w http.ResponseWriter, status int, v any) {\n\tw.Header().Set(\"Content-Type\", \"application/json\")\n\tw.WriteHeader(status)\n\t_ = json.NewEncoder(w).Encode(v)\n}\n\nfunc writeError(w http.ResponseWriter, status int, code, msg string) {\n\twriteJSON(w, status, map[string]any{\"error\": map[string]string{\"code\": code, \"message\": msg}})\n}\n\nfunc marshalBalances(rows []balanceJSON) any {\n\tif len(rows) == 0 {\n\t\treturn nil\n\t}\n\treturn rows\n}"))
	c.toolUse(5, "marshalBalances is unused here but the handler in the running binary is older; the failure is the memstore path. Let me check how the test server is built.", "Grep",
		map[string]any{"pattern": "func newTestServer", "output_mode": "content", "-n": true, "-A": 12},
		"api/server_test.go:14:func newTestServer(t *testing.T) *testServer {\napi/server_test.go-15-\tt.Helper()\napi/server_test.go-16-\tmem := store.NewMem()\napi/server_test.go-17-\ts := &Server{Store: store.Wrap(mem), Log: testLogger(t)}\napi/server_test.go-18-\tmux := http.NewServeMux()\napi/server_test.go-19-\ts.Routes(mux)\napi/server_test.go-20-\treturn &testServer{Server: s, mux: mux}\napi/server_test.go-21-}")
	c.toolUse(6, "", "Edit", map[string]any{"file_path": "/home/dev/src/ledgerd/store/memstore.go",
		"old_string": "\tvar out []Balance\n\tfor _, b := range sums {", "new_string": "\tout := []Balance{}\n\tfor _, b := range sums {"},
		"The file /home/dev/src/ledgerd/store/memstore.go has been updated.")
	c.toolUse(14, "", "Bash", map[string]any{"command": "cd /home/dev/src/ledgerd && go test -v -race ./... 2>&1", "description": "Run every test verbosely with the race detector"}, testLog())
	c.toolUse(21, "", "Bash", map[string]any{"command": "cd /home/dev/src/ledgerd && go vet ./... && staticcheck ./...", "description": "Run go vet and staticcheck"}, "")
	c.toolUse(5, "", "TodoWrite", map[string]any{"todos": []any{
		map[string]any{"content": "Return an empty slice from Store.Balances when there are no postings", "status": "completed", "activeForm": "Fixing Store.Balances"},
		map[string]any{"content": "Return 404 from getBalances for an unknown account", "status": "completed", "activeForm": "Handling unknown accounts"},
		map[string]any{"content": "Add regression tests", "status": "completed", "activeForm": "Adding regression tests"},
		map[string]any{"content": "Run go vet and the tests", "status": "completed", "activeForm": "Running vet and tests"}}},
		"Todos have been modified successfully. Ensure that you continue to use the todo list to track your progress. Please proceed with the current tasks if applicable")
	c.assistantText("Fixed. `Store.Balances` and the in-memory store now return an empty slice for an account without postings (store/store.go:54, store/memstore.go:112), and `getBalances` answers 404 for an unknown account (api/handler.go:47). Two regression tests added; tests, vet and staticcheck pass.")

	// 2. A feature, after a pause long enough for a 5-minute cache to expire.
	c.user(7*60+20, "Now add cursor pagination to GET /v1/accounts/{id}/transactions: ?limit= (default 50, max 200) and ?cursor= from the previous page's next_cursor. Keep newest first.")
	c.toolUse(9, "", "Grep", map[string]any{"pattern": "Transactions\\(", "output_mode": "content", "-n": true},
		"api/handler.go:72:\ttxs, err := s.Store.Transactions(r.Context(), id)\nstore/store.go:63:func (s *Store) Transactions(ctx context.Context, id int64) ([]ledger.Tx, error) {\nstore/memstore.go:121:func (m *Mem) Transactions(ctx context.Context, id int64) ([]ledger.Tx, error) {\nstore/wrap.go:31:func (w Wrapped) Transactions(ctx context.Context, id int64) ([]ledger.Tx, error) {")
	c.toolUse(6, "I'll check the API reference for an existing pagination convention first.", "Read", map[string]any{"file_path": "/home/dev/src/ledgerd/docs/api.md"}, numbered(apiDoc()))
	c.toolUse(5, "", "Read", map[string]any{"file_path": "/home/dev/src/ledgerd/store/wrap.go"},
		numbered("package store\n\nimport (\n\t\"context\"\n\n\t\"ledgerd/ledger\"\n)\n\n// Backend is what the API needs from storage.\ntype Backend interface {\n\tAccount(ctx context.Context, id int64) (ledger.Account, error)\n\tBalances(ctx context.Context, id int64) ([]Balance, error)\n\tTransactions(ctx context.Context, id int64) ([]ledger.Tx, error)\n\tApply(ctx context.Context, tr ledger.Transfer) (ledger.Tx, error)\n}\n\n// Wrapped adds metrics around a Backend.\ntype Wrapped struct{ b Backend }\n\nfunc Wrap(b Backend) Wrapped { return Wrapped{b} }\n\nfunc (w Wrapped) Account(ctx context.Context, id int64) (ledger.Account, error) {\n\tdefer observe(\"account\")()\n\treturn w.b.Account(ctx, id)\n}\n\nfunc (w Wrapped) Balances(ctx context.Context, id int64) ([]Balance, error) {\n\tdefer observe(\"balances\")()\n\treturn w.b.Balances(ctx, id)\n}\n\nfunc (w Wrapped) Transactions(ctx context.Context, id int64) ([]ledger.Tx, error) {\n\tdefer observe(\"transactions\")()\n\treturn w.b.Transactions(ctx, id)\n}\n\nfunc (w Wrapped) Apply(ctx context.Context, tr ledger.Transfer) (ledger.Tx, error) {\n\tdefer observe(\"apply\")()\n\treturn w.b.Apply(ctx, tr)\n}"))
	c.toolUse(11, "I'll add a Page type to the store and thread it through the interface, the wrapper, both stores and the handler.", "MultiEdit", map[string]any{"file_path": "/home/dev/src/ledgerd/store/wrap.go", "edits": []any{
		map[string]any{"old_string": "\tTransactions(ctx context.Context, id int64) ([]ledger.Tx, error)", "new_string": "\tTransactions(ctx context.Context, id int64, page Page) ([]ledger.Tx, string, error)"},
		map[string]any{"old_string": "func (w Wrapped) Transactions(ctx context.Context, id int64) ([]ledger.Tx, error) {\n\tdefer observe(\"transactions\")()\n\treturn w.b.Transactions(ctx, id)", "new_string": "func (w Wrapped) Transactions(ctx context.Context, id int64, page Page) ([]ledger.Tx, string, error) {\n\tdefer observe(\"transactions\")()\n\treturn w.b.Transactions(ctx, id, page)"}}},
		"Applied 2 edits to /home/dev/src/ledgerd/store/wrap.go")
	c.toolUse(9, "", "Write", map[string]any{"file_path": "/home/dev/src/ledgerd/store/page.go", "content": "package store\n\nimport (\n\t\"encoding/base64\"\n\t\"errors\"\n\t\"strconv\"\n\t\"strings\"\n\t\"time\"\n)\n\n// Page selects a window of a newest-first listing.\ntype Page struct {\n\tLimit  int\n\tBefore *Cursor\n}\n\n// Cursor is the position after the last row of a page.\ntype Cursor struct {\n\tAt time.Time\n\tID int64\n}\n\nvar ErrBadCursor = errors.New(\"store: malformed cursor\")\n\nfunc (c Cursor) String() string {\n\treturn base64.RawURLEncoding.EncodeToString([]byte(c.At.UTC().Format(time.RFC3339Nano) + \"|\" + strconv.FormatInt(c.ID, 10)))\n}\n\nfunc ParseCursor(s string) (Cursor, error) {\n\tb, err := base64.RawURLEncoding.DecodeString(s)\n\tif err != nil {\n\t\treturn Cursor{}, ErrBadCursor\n\t}\n\tat, id, ok := strings.Cut(string(b), \"|\")\n\tif !ok {\n\t\treturn Cursor{}, ErrBadCursor\n\t}\n\tt, err := time.Parse(time.RFC3339Nano, at)\n\tif err != nil {\n\t\treturn Cursor{}, ErrBadCursor\n\t}\n\tn, err := strconv.ParseInt(id, 10, 64)\n\tif err != nil {\n\t\treturn Cursor{}, ErrBadCursor\n\t}\n\treturn Cursor{At: t, ID: n}, nil\n}\n"},
		"File created successfully at: /home/dev/src/ledgerd/store/page.go")
	c.toolUse(10, "", "Edit", map[string]any{"file_path": "/home/dev/src/ledgerd/store/store.go",
		"old_string": "func (s *Store) Transactions(ctx context.Context, id int64) ([]ledger.Tx, error) {\n\trows, err := s.db.Query(ctx, \"SELECT t.id, t.kind, t.memo, t.created_at FROM transactions t JOIN postings p ON p.tx_id = t.id WHERE p.account_id = $1 ORDER BY t.created_at DESC, t.id DESC\", id)",
		"new_string": "func (s *Store) Transactions(ctx context.Context, id int64, page Page) ([]ledger.Tx, string, error) {\n\tbefore := Cursor{At: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), ID: 1<<63 - 1}\n\tif page.Before != nil {\n\t\tbefore = *page.Before\n\t}\n\trows, err := s.db.Query(ctx, \"SELECT t.id, t.kind, t.memo, t.created_at FROM transactions t JOIN postings p ON p.tx_id = t.id WHERE p.account_id = $1 AND (t.created_at, t.id) < ($2, $3) ORDER BY t.created_at DESC, t.id DESC LIMIT $4\", id, before.At, before.ID, page.Limit+1)"},
		"The file /home/dev/src/ledgerd/store/store.go has been updated.")
	c.toolUse(8, "", "Edit", map[string]any{"file_path": "/home/dev/src/ledgerd/store/store.go",
		"old_string": "\t\tout = append(out, t)\n\t}\n\treturn out, rows.Err()\n}\n\n// Apply",
		"new_string": "\t\tout = append(out, t)\n\t}\n\tif err := rows.Err(); err != nil {\n\t\treturn nil, \"\", err\n\t}\n\tnext := \"\"\n\tif len(out) > page.Limit {\n\t\tout = out[:page.Limit]\n\t\tlast := out[len(out)-1]\n\t\tnext = Cursor{At: last.Created, ID: last.ID}.String()\n\t}\n\treturn out, next, nil\n}\n\n// Apply"},
		"The file /home/dev/src/ledgerd/store/store.go has been updated.")
	c.toolUse(12, "", "Edit", map[string]any{"file_path": "/home/dev/src/ledgerd/api/handler.go",
		"old_string": "\ttxs, err := s.Store.Transactions(r.Context(), id)\n\tif err != nil {",
		"new_string": "\tpage := store.Page{Limit: 50}\n\tif v := r.URL.Query().Get(\"limit\"); v != \"\" {\n\t\tn, err := strconv.Atoi(v)\n\t\tif err != nil || n < 1 || n > 200 {\n\t\t\twriteError(w, http.StatusBadRequest, \"invalid_limit\", \"limit must be between 1 and 200\")\n\t\t\treturn\n\t\t}\n\t\tpage.Limit = n\n\t}\n\tif v := r.URL.Query().Get(\"cursor\"); v != \"\" {\n\t\tc, err := store.ParseCursor(v)\n\t\tif err != nil {\n\t\t\twriteError(w, http.StatusBadRequest, \"invalid_cursor\", \"cursor is malformed\")\n\t\t\treturn\n\t\t}\n\t\tpage.Before = &c\n\t}\n\ttxs, next, err := s.Store.Transactions(r.Context(), id, page)\n\tif err != nil {"},
		"The file /home/dev/src/ledgerd/api/handler.go has been updated.")
	c.toolUse(15, "", "Bash", map[string]any{"command": "cd /home/dev/src/ledgerd && go build ./... 2>&1 | head -20", "description": "Build everything"},
		"# ledgerd/store\nstore/memstore.go:121:6: (*Mem).Transactions: wrong signature\nstore/store.go:64:2: undefined: time\n# ledgerd/api\napi/handler.go:94:2: declared and not used: next")
	c.toolUse(9, "", "Read", map[string]any{"file_path": "/home/dev/src/ledgerd/store/memstore.go", "offset": 118, "limit": 30},
		numbered("\n\nfunc (m *Mem) Transactions(ctx context.Context, id int64) ([]ledger.Tx, error) {\n\tm.mu.Lock()\n\tdefer m.mu.Unlock()\n\tvar out []ledger.Tx\n\tseen := map[int64]bool{}\n\tfor i := len(m.postings) - 1; i >= 0; i-- {\n\t\tp := m.postings[i]\n\t\tif p.account != id || seen[p.tx] {\n\t\t\tcontinue\n\t\t}\n\t\tseen[p.tx] = true\n\t\tout = append(out, m.txs[p.tx])\n\t}\n\tsort.SliceStable(out, func(i, j int) bool {\n\t\tif !out[i].Created.Equal(out[j].Created) {\n\t\t\treturn out[i].Created.After(out[j].Created)\n\t\t}\n\t\treturn out[i].ID > out[j].ID\n\t})\n\treturn out, nil\n}"))
	c.toolUse(13, "", "MultiEdit", map[string]any{"file_path": "/home/dev/src/ledgerd/store/memstore.go", "edits": []any{
		map[string]any{"old_string": "func (m *Mem) Transactions(ctx context.Context, id int64) ([]ledger.Tx, error) {", "new_string": "func (m *Mem) Transactions(ctx context.Context, id int64, page Page) ([]ledger.Tx, string, error) {"},
		map[string]any{"old_string": "\t\treturn out[i].ID > out[j].ID\n\t})\n\treturn out, nil", "new_string": "\t\treturn out[i].ID > out[j].ID\n\t})\n\tif page.Before != nil {\n\t\tk := 0\n\t\tfor k < len(out) && !before(out[k], *page.Before) {\n\t\t\tk++\n\t\t}\n\t\tout = out[k:]\n\t}\n\tnext := \"\"\n\tif len(out) > page.Limit {\n\t\tout = out[:page.Limit]\n\t\tlast := out[len(out)-1]\n\t\tnext = Cursor{At: last.Created, ID: last.ID}.String()\n\t}\n\treturn out, next, nil"}}},
		"Applied 2 edits to /home/dev/src/ledgerd/store/memstore.go")
	c.toolUse(7, "", "MultiEdit", map[string]any{"file_path": "/home/dev/src/ledgerd/api/handler.go", "edits": []any{
		map[string]any{"old_string": "\twriteJSON(w, http.StatusOK, map[string]any{\"account\": id, \"transactions\": txs})", "new_string": "\tbody := map[string]any{\"account\": id, \"transactions\": txs}\n\tif next != \"\" {\n\t\tbody[\"next_cursor\"] = next\n\t}\n\twriteJSON(w, http.StatusOK, body)"}}},
		"Applied 1 edit to /home/dev/src/ledgerd/api/handler.go")
	c.toolUse(6, "", "Edit", map[string]any{"file_path": "/home/dev/src/ledgerd/store/store.go", "old_string": "import (\n\t\"context\"\n\t\"errors\"\n", "new_string": "import (\n\t\"context\"\n\t\"errors\"\n\t\"time\"\n"},
		"<tool_use_error>String to replace not found in file.\nString: import (\n\t\"context\"\n\t\"errors\"\n</tool_use_error>")
	c.toolUse(8, "time is already imported in store.go; the build error was stale. Let me rebuild and add the before helper.", "Bash", map[string]any{"command": "cd /home/dev/src/ledgerd && go build ./... 2>&1 | head -20", "description": "Build everything"},
		"# ledgerd/store\nstore/memstore.go:140:22: undefined: before")
	c.toolUse(9, "", "Edit", map[string]any{"file_path": "/home/dev/src/ledgerd/store/page.go", "old_string": "func ParseCursor(s string) (Cursor, error) {",
		"new_string": "// before reports whether t sorts after c in a newest-first listing.\nfunc before(t ledger.Tx, c Cursor) bool {\n\tif !t.Created.Equal(c.At) {\n\t\treturn t.Created.Before(c.At)\n\t}\n\treturn t.ID < c.ID\n}\n\nfunc ParseCursor(s string) (Cursor, error) {"},
		"The file /home/dev/src/ledgerd/store/page.go has been updated.")
	c.toolUse(18, "", "Bash", map[string]any{"command": "cd /home/dev/src/ledgerd && go build ./... && go test ./... 2>&1 | tail -30", "description": "Build and run all tests"},
		"store/page.go:4:2: \"ledgerd/ledger\" imported and not used... (fixed by goimports on save)\nok  \tledgerd/api\t0.421s\nok  \tledgerd/ledger\t0.011s\nok  \tledgerd/store\t2.044s\n?   \tledgerd/cmd/ledgerd\t[no test files]")
	c.toolUse(14, "I'll add tests for paging through three pages and for a malformed cursor.", "Edit", map[string]any{"file_path": "/home/dev/src/ledgerd/api/handler_test.go",
		"old_string": "func TestPostTransferRejectsUnknownFields(t *testing.T) {",
		"new_string": "func TestListTransactionsPages(t *testing.T) {\n\tsrv := newTestServer(t)\n\ta := storetest.Account(t, srv.Store, \"dave\")\n\tb := storetest.Account(t, srv.Store, \"erin\")\n\tfor i := 0; i < 5; i++ {\n\t\tstoretest.Transfer(t, srv.Store, a, b, \"EUR\", int64(100+i))\n\t}\n\tvar seen int\n\tcursor := \"\"\n\tfor pages := 0; pages < 10; pages++ {\n\t\tbody := getJSON(t, srv, \"/v1/accounts/\"+b.IDString()+\"/transactions?limit=2&cursor=\"+cursor)\n\t\tseen += len(body[\"transactions\"].([]any))\n\t\tnext, _ := body[\"next_cursor\"].(string)\n\t\tif next == \"\" {\n\t\t\tbreak\n\t\t}\n\t\tcursor = next\n\t}\n\tif seen != 5 {\n\t\tt.Fatalf(\"saw %d transactions over the pages, want 5\", seen)\n\t}\n}\n\nfunc TestListTransactionsBadCursor(t *testing.T) {\n\tsrv := newTestServer(t)\n\trec := httptest.NewRecorder()\n\tsrv.mux.ServeHTTP(rec, httptest.NewRequest(\"GET\", \"/v1/accounts/1/transactions?cursor=%%%\", nil))\n\tif rec.Code != http.StatusBadRequest {\n\t\tt.Fatalf(\"%d %s\", rec.Code, rec.Body)\n\t}\n}\n\nfunc TestPostTransferRejectsUnknownFields(t *testing.T) {"},
		"The file /home/dev/src/ledgerd/api/handler_test.go has been updated.")
	c.toolUse(16, "", "Bash", map[string]any{"command": "cd /home/dev/src/ledgerd && go test ./api/ -run 'Transactions|Balances' -v 2>&1 | tail -30", "description": "Run the new API tests"},
		"=== RUN   TestGetBalances\n--- PASS: TestGetBalances (0.02s)\n=== RUN   TestGetBalancesNoTransactions\n--- PASS: TestGetBalancesNoTransactions (0.01s)\n=== RUN   TestGetBalancesUnknownAccount\n--- PASS: TestGetBalancesUnknownAccount (0.01s)\n=== RUN   TestListTransactionsPages\n--- PASS: TestListTransactionsPages (0.03s)\n=== RUN   TestListTransactionsBadCursor\n--- PASS: TestListTransactionsBadCursor (0.00s)\nPASS\nok  \tledgerd/api\t0.233s")
	c.assistantText("Done. `?limit=` (1–200, default 50) and `?cursor=` page newest first; each page carries `next_cursor` while more remain. The cursor encodes (created_at, id) so ties are stable (store/page.go). Tests cover three pages and a malformed cursor.")

	// 3. Commit.
	c.user(95, "looks good, commit it")
	c.toolUse(6, "", "Bash", map[string]any{"command": "cd /home/dev/src/ledgerd && git status && git diff --stat && git log --oneline -5", "description": "Show status, diff and recent commits"},
		"On branch fix/empty-balances\nChanges not staged for commit:\n\tmodified:   api/handler.go\n\tmodified:   api/handler_test.go\n\tmodified:   store/memstore.go\n\tmodified:   store/store.go\n\tmodified:   store/wrap.go\nUntracked files:\n\tstore/page.go\n\n api/handler.go      | 31 +++++++++++++++++++++++++++++--\n api/handler_test.go | 52 ++++++++++++++++++++++++++++++++++++++++++++++++++++\n store/memstore.go   | 16 ++++++++++++++--\n store/store.go      | 27 +++++++++++++++++++++------\n store/wrap.go       |  6 +++---\n 5 files changed, 119 insertions(+), 13 deletions(-)\n9c1e2f4 store: index transactions by account and time\n51aa0d7 api: return balances in minor units\n0b7d3e8 ci: run go vet and staticcheck\ne44a9c1 ledger: reject transfers between the same account\n7f20ab6 initial import")
	c.toolUse(9, "", "Bash", map[string]any{"command": "cd /home/dev/src/ledgerd && git add api/handler.go api/handler_test.go store/memstore.go store/store.go store/wrap.go store/page.go && git commit -m \"api: empty balances for accounts without postings, 404 for unknown accounts, cursor pagination of transactions\" && git status", "description": "Commit the changes"},
		"[fix/empty-balances 3e7a1d9] api: empty balances for accounts without postings, 404 for unknown accounts, cursor pagination of transactions\n 6 files changed, 160 insertions(+), 13 deletions(-)\n create mode 100644 store/page.go\nOn branch fix/empty-balances\nnothing to commit, working tree clean")
	c.assistantText("Committed as 3e7a1d9 on fix/empty-balances.")
	return c.trace("coding-agent", "anthropic", "/v1/messages", base, true)
}

// apiDoc is the service's API reference the agent reads (about 17 KB):
// every endpoint with its parameters, errors and an example.
func apiDoc() string {
	type ep struct{ method, path, what, params, example string }
	eps := []ep{
		{"GET", "/v1/accounts", "Lists accounts, oldest first.", "name_prefix (string, optional): only accounts whose name starts with it", `{"accounts":[{"id":41,"name":"alice","created_at":"2026-03-02T10:11:12Z"}]}`},
		{"POST", "/v1/accounts", "Creates an account.", "name (string, required, 1-64 characters, unique)", `{"id":42,"name":"bob","created_at":"2026-03-02T10:12:00Z"}`},
		{"GET", "/v1/accounts/{id}", "Returns one account.", "id (path, integer)", `{"id":41,"name":"alice","created_at":"2026-03-02T10:11:12Z"}`},
		{"PATCH", "/v1/accounts/{id}", "Renames an account.", "name (string, required)", `{"id":41,"name":"alice-ops","created_at":"2026-03-02T10:11:12Z"}`},
		{"DELETE", "/v1/accounts/{id}", "Closes an account with zero balances in every currency.", "id (path, integer)", `{"id":41,"closed_at":"2026-03-09T08:00:00Z"}`},
		{"GET", "/v1/accounts/{id}/balances", "Balances per currency, in minor units.", "as_of (RFC 3339, optional): balances at that instant", `{"account":41,"balances":[{"Currency":"EUR","Minor":125000,"AsOf":"2026-03-04T09:00:00Z"}]}`},
		{"GET", "/v1/accounts/{id}/transactions", "Transactions touching the account, newest first.", "kind (string, optional): transfer, fee, reversal", `{"account":41,"transactions":[{"id":9001,"kind":"transfer","memo":"rent","created_at":"2026-03-04T09:00:00Z"}]}`},
		{"GET", "/v1/accounts/{id}/statements", "Monthly statements.", "year (integer, required), month (integer 1-12, optional)", `{"account":41,"statements":[{"month":"2026-02","opening":{"EUR":100000},"closing":{"EUR":125000}}]}`},
		{"POST", "/v1/transfers", "Moves an amount between two accounts in one currency.", "from, to (integers, required, different), currency (ISO 4217, required), amount_minor (integer > 0, required), memo (string, optional, up to 140 characters), idempotency_key (string, optional)", `{"id":9002,"kind":"transfer","memo":"rent","created_at":"2026-03-04T09:00:00Z"}`},
		{"GET", "/v1/transfers/{id}", "Returns one transfer with its postings.", "id (path, integer)", `{"id":9002,"postings":[{"account":41,"currency":"EUR","minor":-50000},{"account":42,"currency":"EUR","minor":50000}]}`},
		{"POST", "/v1/transfers/{id}/reverse", "Reverses a transfer with a new transaction of kind reversal.", "memo (string, optional)", `{"id":9003,"kind":"reversal","reverses":9002}`},
		{"GET", "/v1/currencies", "Currencies the ledger accepts with their minor-unit exponent.", "none", `{"currencies":[{"code":"EUR","exponent":2},{"code":"JPY","exponent":0}]}`},
		{"GET", "/v1/fees", "The fee schedule.", "none", `{"fees":[{"kind":"fx","bps":35},{"kind":"transfer","fixed_minor":{"EUR":25}}]}`},
		{"POST", "/v1/holds", "Places a hold on funds.", "account (integer, required), currency, amount_minor, expires_at (RFC 3339, at most 7 days ahead)", `{"id":"h_7Qk2","status":"active"}`},
		{"DELETE", "/v1/holds/{id}", "Releases a hold.", "id (path, string)", `{"id":"h_7Qk2","status":"released"}`},
		{"GET", "/v1/audit", "The audit log, newest first.", "actor (string, optional), since (RFC 3339, optional), page_size (integer, 1-500, default 100), page_token (string, optional): the next_page_token of the previous page", `{"entries":[{"at":"2026-03-04T09:00:00Z","actor":"svc-payroll","action":"transfer.create","target":"9002"}],"next_page_token":"eyJpZCI6MTIzfQ"}`},
		{"GET", "/v1/webhooks", "Configured webhooks.", "none", `{"webhooks":[{"id":"wh_1","url":"https://example.test/hook","events":["transfer.created"]}]}`},
		{"POST", "/v1/webhooks", "Adds a webhook; deliveries are signed with HMAC-SHA256 in X-Ledgerd-Signature.", "url (https, required), events (array, required)", `{"id":"wh_2","secret_hint":"whsec_...9f2c"}`},
		{"GET", "/healthz", "Liveness: 200 while the process can serve.", "none", `ok`},
		{"GET", "/readyz", "Readiness: 200 once the database answers and migrations are current.", "none", `{"db":"ok","migrations":"0031"}`},
	}
	var b strings.Builder
	b.WriteString("# ledgerd HTTP API\n\nAll bodies are JSON. Amounts are integers in the currency's minor unit. Times are RFC 3339 in UTC.\nAuthentication: a bearer token per service, scoped to read, write or admin.\n\n## Errors\n\nEvery error is {\"error\":{\"code\":\"...\",\"message\":\"...\"}} with the status below.\n\n| status | code | meaning |\n|---|---|---|\n| 400 | invalid_body, invalid_account, invalid_limit | the request is malformed |\n| 401 | unauthenticated | no or a bad token |\n| 403 | forbidden | the token's scope does not allow it |\n| 404 | not_found | no such resource |\n| 409 | conflict | an idempotency key reused with another body |\n| 422 | invalid_transfer | well-formed but refused by the ledger's rules |\n| 429 | rate_limited | over 50 requests per second per token |\n| 500 | internal | a bug; the request id is in X-Request-Id |\n\n## Pagination\n\nOnly the audit log pages today (page_size/page_token). Other listings return everything; see the roadmap.\n\n## Endpoints\n")
	for _, e := range eps {
		fmt.Fprintf(&b, "\n### %s %s\n\n%s\n\nParameters: %s.\n\nScopes: %s. Rate class: %s.\n\nExample response:\n\n    %s\n\nErrors: 400 for malformed input, 401/403 for authentication and scope, 404 when the resource does not exist, 429 when rate limited, 500 on internal failure. Responses carry X-Request-Id; retry 429 and 5xx with exponential backoff starting at 200 ms, at most five times, and reuse the idempotency_key on writes so a retry never applies twice.\n",
			e.method, e.path, e.what, e.params, map[bool]string{true: "read", false: "write"}[e.method == "GET"], map[bool]string{true: "cheap", false: "standard"}[e.method == "GET"], e.example)
	}
	b.WriteString("\n## Roadmap\n\n- Cursor pagination for transaction listings (newest first, opaque cursors, limit up to 200).\n- Multi-currency transfers with an explicit fx quote id.\n- Statement exports as CSV and camt.053.\n")
	return b.String()
}

// testLog is a verbose, race-enabled run of the service's tests (about 30
// KB), the kind of tool result that makes an agent's history grow.
func testLog() string {
	var b strings.Builder
	pkgs := []struct {
		name  string
		tests []string
	}{
		{"ledgerd/api", []string{"GetAccount", "GetAccountNotFound", "GetAccountBadID", "GetBalances", "GetBalancesNoTransactions", "GetBalancesUnknownAccount", "ListTransactions", "PostTransfer", "PostTransferRejectsUnknownFields", "PostTransferSameAccount", "PostTransferNegativeAmount", "PostTransferIdempotent", "Holds", "HoldExpiry", "Webhooks", "WebhookSignature", "AuditPages", "RateLimit", "Healthz", "Readyz"}},
		{"ledgerd/ledger", []string{"TransferValidate", "TransferPostings", "CurrencyExponent", "MinorUnits", "Reversal", "FeeSchedule", "FXQuote", "Rounding"}},
		{"ledgerd/store", []string{"Account", "AccountNotFound", "Balances", "BalancesEmpty", "BalancesAsOf", "Transactions", "TransactionsOrder", "Apply", "ApplyRollsBack", "ApplyConcurrent", "Holds", "Statements", "Migrations", "MemMatchesPostgres"}},
	}
	for _, p := range pkgs {
		for i, tn := range p.tests {
			fmt.Fprintf(&b, "=== RUN   Test%s\n", tn)
			for k := 0; k < 6; k++ {
				fmt.Fprintf(&b, "=== RUN   Test%s/case_%d\n    %s_test.go:%d: setup: created accounts %d and %d, seeded %d postings\n", tn, k, strings.ToLower(tn[:1])+tn[1:], 40+7*i+k, 100+i*3+k, 200+i*3+k, (i+1)*(k+2))
			}
			for k := 0; k < 6; k++ {
				fmt.Fprintf(&b, "    --- PASS: Test%s/case_%d (0.0%ds)\n", tn, k, (i+k)%9)
			}
			fmt.Fprintf(&b, "--- PASS: Test%s (0.%02ds)\n", tn, (i*7)%100)
		}
		fmt.Fprintf(&b, "PASS\nok  \t%s\t%d.%03ds\n", p.name, 1+len(p.tests)/10, len(p.tests)*37%1000)
	}
	b.WriteString("?   \tledgerd/cmd/ledgerd\t[no test files]\n")
	return b.String()
}
