"""The audit's patterns, over the lower-cased UTF-8 bytes of a file (``bytes.lower`` keeps
every offset; it lower-cases ASCII only, which is what commands and these phrases are).

Two kinds: **triggers**, each starting with a literal (the regex engine then skips to the
literal at memchr speed, so a file without it costs one fast pass), which pick the lines
worth a look; and the **checks** run on those lines only. Every pattern is linear on any
input: no open-ended repeat is followed by something that could make it backtrack over the
text (gaps are ``{0,N}``), and a run that must be long is anchored by a look-behind so that
it is tried once per run, not once per character.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator


def _u(s: str) -> bytes:
    """A pattern fragment holding non-ASCII characters, as the UTF-8 bytes it matches."""
    return re.escape(s.encode("utf-8"))


# --- triggers (lines worth a look) ----------------------------------------------------------------
# commands that run something: a pipe into a shell or an interpreter, a command substitution
# of a download, PowerShell's Invoke-Expression, exec/eval of a string, a download then run
_CHMOD = re.compile(rb"ch(?:mod|own)\s")      # shared: chmod +x before a run; chmod -R of /
TRIG_COMMANDS = [re.compile(p) for p in (
    (rb"\|[ \t]{0,4}(?:sudo\s|env\s|(?:/usr)?(?:/local)?/bin/|(?:ba|z|k|da|fi|tc|c)?sh\b|python|py\b|node|deno|"
     rb"bun\b|perl|ruby|php|pwsh|powershell|iex|invoke-expression|source|lua|osascript|cmd)"),
    rb"\$\(\s{0,4}(?:curl|wget|iwr|irm|invoke-|echo|printf|base64|xxd|openssl|cat)",
    rb"<\(\s{0,4}(?:curl|wget|iwr|irm)", rb"`\s{0,4}(?:curl|wget)", rb"iex\b", rb"invoke-", rb"exec\s{0,4}\(",
    rb"eval\s{0,4}\(", rb"atob", rb"-e(?:c|n[a-z]{0,12})?[\"']?(?:\s{1,4}|[\"']?\s{0,3},\s{0,3}[\"']?|:)[a-z0-9+/=]{40}",
    rb"-e(?:c|n[a-z]{0,12})?[\s:]{1,4}(?:\$[({]?|%)[a-z_]",
    (rb"(?:&&|;)\s{0,4}(?:sudo\s+)?(?:(?:ba|z|k|da)?sh\s|\./|chmod|python|node\s|ruby\s|perl\s|lua|php\s|rscript\s|"
     rb"pwsh\s|tclsh\s|julia\s)"), rb"download(?:string|file)", rb"instance_eval",
    rb"deno\s+run", rb"npx\s", rb"bunx\s", rb"dlx\s",
)] + [_CHMOD]
TRIG_PUBLISH = [re.compile(p) for p in (rb"gist", rb"paste", rb"issue", rb"comment", rb"discussion", rb"public\s+repo")]
# decoders named in code (looked for when their words are in the file)
TRIG_DECODE = [re.compile(p) for p in (
    rb"atob", rb"b64decode", rb"decode64", rb"decode_base64", rb"fromhex", rb"unhexlify", rb"codecs\.decode", rb"buffer\.from",
    rb"frombase64string", rb"base64_decode", rb"str_rot13", rb"gzinflate", rb"gzuncompress", rb"hex2bin",
    rb"fromcharcode", rb"bytes\(\s{0,3}\[", rb"bytearray\(\s{0,3}\[", rb"\|\s{0,8}rev\s{0,8}\|",
    # Perl's pack "H*" (hex), Ruby's rot13 through tr and base64 through unpack("m")
    rb"pack\(?\s{0,3}['\"]h\*", rb"\.tr\(\s{0,3}['\"]a-za-z['\"]", rb"unpack1?\(\s{0,3}['\"]m0?['\"]",
)]
# secrets on disk and the whole environment
TRIG_SECRETS = [re.compile(p) for p in (
    (rb"\.(?:ssh|aws|env|gnupg|kube|netrc|npmrc|pypirc|git-credentials|docker[/\\]config|config[/\\]gcloud|azure|"
     rb"password-store|config[/\\]gh|bash_history|zsh_history)"),
    rb"id_(?:rsa|dsa|ecdsa|ed25519)", rb"env(?:iron\b|\s{0,4}[|)`:])", rb"/etc/shadow",
    rb"find-(?:generic|internet)-password",
)]
TRIG_DESTRUCTIVE = [re.compile(p) for p in (
    rb"rm\s+-", rb"/dev/", rb"remove-item", rb"-delete\b", rb":\s{0,3}\(\s{0,3}\)\s{0,3}\{",
    rb"(?:rd|rmdir|del)\s+/", rb"vssadmin", rb"wbadmin", rb"shadowcopy",
)] + [_CHMOD]
# a shell opened to a remote host, a key that lets one log in; an agent run with its checks off
TRIG_REMOTE = [re.compile(p) for p in (
    rb"/dev/(?:tcp|udp)/", rb"nc(?:at)?(?:\.exe)?(?:\s[^\n]{0,120}?)?\s-[ec]\s", rb"netcat\s", rb"socat\s", rb"dup2\(",
    rb"pty\.spawn",
    rb"authorized_keys",
)]
TRIG_UNGUARDED = [re.compile(p) for p in (rb"danger(?:ously-|-full-access)", rb"yolo", rb"bypasspermissions")]
TRIG_OVERRIDE = [re.compile(p) for p in (
    rb"ignor", rb"disregard", rb"forget", rb"overrid", rb"bypass", rb"you(?:\s+are\s+now|r\s+new\s)",
    rb"anything\s+now", rb"system\s+prompt",
)]
TRIG_CONCEAL = [re.compile(p) for p in (
    rb"the\s+(?:user|human)\b", rb"user\s+(?:must|should|will)\s+(?:not|never)",
)]
_TELL = rb"(?:say|tell|mention|reveal|disclose|report|explain|discuss|acknowledge|note|talk|bring|inform|notify|alert|let)"
TRIG_CONCEAL_MORE = [re.compile(p) for p in (
    rb"not\s+" + _TELL, rb"n't\s+" + _TELL, _u("n’t") + rb"\s+" + _TELL, rb"never\s+" + _TELL, rb"need\s+to\s+" + _TELL,
    rb"without\s+" + _TELL,
    rb"keep\s+(?:this|these|that|it|them)\b", rb"silently\s", rb"quietly\s", rb"secretly\s", rb"keep\s+quiet",
    rb"stay\s+(?:quiet|silent)", rb"say\s+nothing", rb"remain\s+silent", rb"if\s+(?:the\s+)?(?:user|human|they|anyone)\s+ask",
    rb"not\s+(?:list|show|include|record|log|print|surface|flag|highlight|summari|describe|note)",
    rb"n't\s+(?:list|show|include|record|log|print|surface|flag|highlight|summari|describe|note)",
    rb"never\s+(?:list|show|include|record|log|print|surface|flag|highlight|summari|describe|note)",
    rb"omit\s", rb"leave\s+(?:this|these|that|it|them)\s", rb"exclude\s+(?:this|these|that|it|them)\s",
)]

# --- fetch and run --------------------------------------------------------------------------------
FETCH = re.compile(rb"(?:^|[\s(;&`$\"'])(?:curl|wget|iwr|irm|invoke-webrequest|invoke-restmethod|aria2c|lwp-request)"
                   rb"(?=[\s.]|$)|downloadstring\(|downloadfile\(|urlopen\(|requests\.get\(|urllib\.request")
# what a fetched (or decoded) script is piped into, at the start of the next pipeline stage;
# an interpreter counts only when it reads the program from stdin (``python3 -``, ``node``):
# ``| python3 -c 'import json…'`` or ``| python3 tool.py`` reads data, not code
RUNNER = re.compile(rb"\s*(?:sudo(?:\s+-{1,2}[\w-]{1,20}){0,4}\s+)?(?:env\s+(?:[a-z_][a-z0-9_]{0,40}=\S{0,100}\s+){0,6})?"
                    rb"(?:(?:/usr)?(?:/local)?/bin/)?"
                    rb"(?:(?P<sh>(?:ba|z|k|da|fi|tc|c)?sh|pwsh|powershell(?:\.exe)?|iex|invoke-expression|"
                    rb"source\s+/dev/stdin|cmd(?:\.exe)?)(?=[\s;)&|'\"`<]|[.,!](?:\s|$)|$)|"
                    rb"(?P<interp>python[0-9.]{0,4}|py|node|nodejs|deno|bun|perl|ruby|php|lua|osascript)"
                    rb"(?=\s*$|\s+-\s|\s+-$|\s*[;)&|`<]))")    # a markup tag ends the command (``sh</argument>``)
# a download's output run at once: eval "$(curl …)", bash <(curl …), sh -c "$(wget …)"
RUN_SUBST = re.compile(rb"(?:(?<![\w.-])(?:eval|(?:ba|z|k|da)?sh(?:\s+-c)?|iex|invoke-expression|python[0-9.]{0,4}\s+-c|"
                       rb"exec)\s{0,4}[(\"']{0,3}\s{0,4}(?:\$\(|<\(|`)|(?:^|[\s;&|(])(?:source|\.)\s+[\"']?(?:<\(|\$\(|`)|"
                       rb"(?<![\w.-])(?:python[0-9.]{0,4}|node|perl|ruby|php|deno\s+run|bun)\s+<\()"
                       rb"\s{0,4}(?:curl|wget|iwr|irm|invoke-webrequest|invoke-restmethod)\b")
# The documented installers of well-known tools, fetched over HTTPS from their vendor: still a
# download that runs (medium), but not the stranger's script that makes fetch-and-run high.
# A prefix of the URL after ``https://``; a host matches itself and its paths only.
KNOWN_INSTALLERS = (
    "sh.rustup.rs", "static.rust-lang.org/rustup", "astral.sh/uv/", "astral.sh/ruff/", "bun.sh/install",
    "deno.land/install", "deno.land/x/install", "get.docker.com", "get.pnpm.io/install", "install.python-poetry.org",
    "raw.githubusercontent.com/homebrew/install/", "raw.githubusercontent.com/nvm-sh/nvm/", "deb.nodesource.com/",
    "rpm.nodesource.com/", "fluxcd.io/install.sh", "run.linkerd.io/install", "get.helm.sh",
    "raw.githubusercontent.com/helm/helm/", "sdk.cloud.google.com", "aka.ms/installazureclideb",
    "community.chocolatey.org/install.ps1", "aspire.dev/install", "get.nextflow.io", "get.sdkman.io",
    "ollama.com/install.sh", "claude.ai/install", "fly.io/install", "get.k3s.io", "install.determinate.systems/nix",
    "nixos.org/nix/install", "get.volta.sh", "mise.run", "starship.rs/install.sh", "tailscale.com/install.sh",
    "dot.net/v1/dotnet-install", "cli.github.com/", "opencode.ai/install", "get.jetify.com/devbox",
    "install.pi-hole.net",
)
# a runner given a URL runs the code it downloads: deno run https://…, npx https://…
REMOTE_RUN = re.compile(rb"(?:^|[\s;&|(`])(?:deno\s+run|npx|bunx|pnpm\s+dlx|yarn\s+dlx)\s+(?:-{1,2}[\w=.,:/-]{1,40}\s+){0,8}"
                        rb"https?://")
PS_RUN = re.compile(rb"(?:iex|invoke-expression)\s{0,4}[(\"']{0,3}\s{0,4}\(?\s{0,4}(?:iwr|irm|invoke-webrequest|"
                    rb"invoke-restmethod|new-object\s+(?:system\.)?net\.webclient)\b")
RUN_FETCHED_ARG = re.compile(rb"(?:\bexec|\beval|instance_eval|new\s+function|runinthiscontext|\biex|invoke-expression)"
                             rb"(?:\s{0,4}\(|\s+)[^;\n]{0,120}?(?:net::http\.get|uri\.open|open-uri|urlopen\(|requests\.get\(|"
                             rb"httpx\.get\(|\bfetch\(|axios\.get\(|https?\.get\(|downloadstring\(|invoke-webrequest|"
                             rb"invoke-restmethod|\biwr\b|\birm\b|file_get_contents\(\s{0,3}['\"]https?:|\bcurl\b|\bwget\b)")
CODE_RUN_FETCH = re.compile(rb"(?:exec|eval)\s{0,4}\(\s{0,4}(?:await\s+)?\(?\s{0,4}(?:await\s+)?(?:urllib\.request\.)?"
                            rb"(?:urlopen|requests\.get|fetch|httpx\.get)\s{0,4}\(")
# curl -o x.sh URL && sh x.sh / chmod +x x && ./x
DOWNLOAD_OPT = re.compile(rb"(?:^|\s)(?:-o|--output|--output-document|-outfile)(?:\s|=|$)")
# a file run: by a shell, by any interpreter that takes a program's path (``lua "$T"``, ``node "$f"``, ``Rscript x``), by path
RUN_FILE = re.compile(rb"\s*(?:sudo\s+)?(?:(?:ba|z|k|da)?sh\s+\S|python[0-9.]{0,4}\s+\S|\./\S|"
                      rb"chmod\s+[+0-7]{1,5}x?\s+\S|(?:source|\.)\s+\S|"
                      rb"(?:node(?:js)?|ruby|perl|lua(?:jit|[0-9.]{1,4})?|php|rscript|pwsh|tclsh|julia|bun|deno\s+run|"
                      rb"osascript|[cw]script)\s+(?:-\S{1,20}\s+){0,3}[\"'$./~\w])")
COMMAND_SEP = re.compile(rb"&&|;|\n")

# --- decode and run -------------------------------------------------------------------------------
DECODE = re.compile(rb"base(?:64|32)\s+(?:-\w{0,5}d\b|--decode\b)|uudecode\b|\btr\s+['\"]?a-za-z['\"]?\s+['\"]?n-z|b64decode|xxd\s+-\w{0,5}r|openssl\s+(?:base64|enc)\b.{0,80}?"
                    rb"\s-d\b|certutil\s+-decode|frombase64string|atob\s*\(|unhexlify|bytes\.fromhex|"
                    rb"buffer\.from\([^)]{0,4000},\s*['\"](?:base64|hex)['\"]\s*\)|"
                    # a pipeline stage that only reverses its input: echo 'hs | …//:sptth lruc' | rev | bash
                    rb"^\s{0,8}rev\s{0,8}$")
# a stage that only reshapes what a decoder gave it (a decompressor, another decoder, a reversal), between it and a shell
TRANSFORM = re.compile(rb"\s{0,8}(?:gunzip|zcat|unxz|xzcat|bunzip2|bzcat|unzstd|zstdcat|brotli\s+-\w{0,5}d|"
                       rb"(?:gzip|xz|bzip2|zstd|lzma|lz4)\s+-\w{0,5}d|openssl\s+(?:base64|enc)\b[^|]{0,80}?-d|"
                       rb"base(?:64|32)\s+-\w{0,5}d|xxd\s+-\w{0,5}r|rev|tr\s)[^|]{0,80}$")
CODE_RUN_DECODE = re.compile(rb"(?:\b(?:exec|eval)\s{0,4}\(|new\s+function\s{0,4}\(|function\s{0,4}\()\s{0,4}"
                             rb"(?:atob|base64\.b64decode|codecs\.decode|zlib\.decompress|marshal\.loads|bytes\.fromhex|"
                             rb"binascii\.unhexlify|buffer\.from|decodeuricomponent|unescape|compile\s{0,4}\(\s{0,4}"
                             rb"base64)\b")
# PowerShell decodes -EncodedCommand itself (any prefix of it, -ec too), given as one word or as items of an
# argument list ("-NoProfile","-enc","SQBFAFgA…")
PS_ENCODED = re.compile(rb"(?:powershell|pwsh)(?:\.exe)?\b.{0,200}?[\s\"',]-e(?:c|n[a-z]{0,12})?[\"']?(?:\s{1,4}|[\"']?\s{0,3},"
                        rb"\s{0,3}[\"']?|:)[a-z0-9+/=]{40}")
# ... or a reference to a value in any syntax ($x, $(x), ${x}, %x%): what the name holds is read by ``ps_encoded_ref``
PS_ENCODED_REF = re.compile(rb"(?:powershell|pwsh)(?:\.exe)?\b[^\n]{0,200}?\s-e(?:c|n[a-z]{0,12})?[\s:]{1,4}"
                            rb"(?:\$[({]?|%)(?P<n>[a-z_][\w.]{0,40})")


def ps_encoded_ref(text: bytes, line: bytes) -> re.Match[bytes] | None:
    """``powershell -EncodedCommand $(Name)`` where ``Name`` is set to a long base64 string in the same file (a
    variable, an MSBuild property ``<Name>…</Name>``, a key ``Name: …``): PowerShell decodes it and runs it."""
    m = PS_ENCODED_REF.search(line)
    if m is None:
        return None
    held = re.compile(rb"\b" + re.escape(m.group("n")) + rb"\b[\"']?\s{0,3}[>=:]\s{0,3}[\"']?[a-z0-9+/]{40}")
    return m if held.search(text, 0, 1_000_000) else None


SUBST_DECODE_RUN = re.compile(rb"(?:eval|(?:ba|z|k)?sh\s+-c|iex|invoke-expression|exec|python[0-9.]{0,4}\s+-c|node\s+-e|"
                              rb"perl\s+-e|ruby\s+-e)\s{0,4}[(\"']{0,3}\s{0,4}\$\(")

# --- secrets out ------------------------------------------------------------------------------------
SECRET_PATH = re.compile(rb"(?:^|[\s\"'`=@<(:/\\~$])\.(?:ssh|aws|gnupg|kube|azure|netrc|npmrc|pypirc|git-credentials|"
                         rb"password-store|bash_history|zsh_history|docker[\\/]config\.json|config[\\/]gcloud|"
                         rb"config[\\/]gh[\\/]hosts\.yml)(?![\w-])|"
                         rb"\bid_(?:rsa|dsa|ecdsa|ed25519)\b(?!\.pub)|/etc/shadow\b|"
                         rb"(?:^|[\s\"'`=@<(:/\\])\.env(?:\.(?:local|prod|production|development|dev|staging|test))?"
                         rb"(?![\w.-])|find-(?:generic|internet)-password|"
                         # every file of a kind that holds keys (``*.pem``, ``*.key``): a pattern of secret files
                         rb"(?:^|[\s\"'`(])\*\*?/?\*?\.(?:pem|key|p12|pfx|jks|keystore)(?![\w.-])")
ENV_DUMP_STAGE = re.compile(rb"\s*(?:sudo\s+)?(?:printenv|env|set|export\s+-p|(?:get-childitem|gci|dir|ls)\s+env:)\s*$")
ENV_DUMP_INLINE = re.compile(rb"\$\(\s*(?:printenv|env|set)\s*(?:[|)]|$)|`\s*(?:printenv|env)\s*(?:[|`]|$)|"
                             rb"dict\(\s*os\.environ\s*\)|os\.environ\.(?:copy|items)\(\)|"
                             rb"(?:json\.dumps|str|repr)\(\s*(?:dict\(\s*)?os\.environ\b|"
                             rb"json\.stringify\(\s*process\.env\s*\)|object\.(?:entries|keys|values)\(\s*process\.env\s*\)|"
                             rb"\{\s*\.\.\.process\.env\s*\}|\{\s*\*\*os\.environ\s*\}")
SINK = re.compile(rb"(?:^|[\s(;&`$|])(?P<cmd>curl|wget|nc|ncat|netcat|socat|scp|rsync|sftp|ftp|telnet|iwr|irm|"
                  rb"invoke-webrequest|invoke-restmethod|sendmail|mail|mutt)(?=\s|$)|/dev/(?:tcp|udp)/|"
                  rb"requests\.(?:post|put|patch)\(|httpx\.(?:post|put|patch)\(|urlopen\(|\bfetch\(|"
                  rb"axios\.(?:post|put|patch)\(|\.sendall?\(|smtplib\.|webhook")
SENDS_ANY_ARG = {b"scp", b"rsync", b"sftp", b"nc", b"ncat", b"netcat", b"socat", b"telnet", b"ftp", b"sendmail",
                 b"mail", b"mutt"}
UPLOAD_MARK = re.compile(rb"(?:^|\s)(?:-d|--data[\w-]{0,12}|-f|--form|-t|--upload-file|--post-file|--post-data|"
                         rb"--body-file|-body|-infile)(?:\s|=|$)|@|<|\$\(|`|\b(?:data|files|json|body|content)\s*[=:]")
# ssh -i ~/.ssh/key, scp -i …, rsync -e "ssh -i …": the key authenticates, it is not sent
IDENTITY = re.compile(rb"(?:^|\s)(?:-i|--identity(?:-file)?|identityfile|-o\s*identityfile)(?:\s|=)\s*[\"']?"
                      rb"[~$\w{}/\\.-]{0,80}$")

# --- destroying data ----------------------------------------------------------------------------------
_RM = (rb"(?<![\w-])rm\s+(?:-{1,2}[\w-]{1,20}\s+){0,4}(?:-{1,2}[\w-]{0,20}r\w{0,10}|--recursive)\s+"
       rb"(?:-{1,2}[\w-]{1,20}\s+){0,4}")
DESTRUCTIVE = [
    # any of its targets (``rm -rf build /srv/*``), not only the first
    (re.compile(_RM + rb"(?:[^\s;&|<>]{1,200}\s+){0,8}?[\"']?(?P<t>/\*?|~/?\*?|\$home/?\*?|\$\{home\}/?\*?|%userprofile%|"
                rb"/(?:bin|boot|dev|etc|home|lib|lib64|opt|root|sbin|srv|sys|usr|var|users|system|library|"
                rb"applications)/?\*?)[\"']?(?=[\s;&|)]|$)"), "deletes {t} recursively"),
    (re.compile(_RM + rb"--no-preserve-root\b"), "deletes with --no-preserve-root"),
    (re.compile(rb"(?<![\w-])mkfs(?:\.\w{1,10})?\s+(?:-{1,2}\S{1,20}\s+){0,6}/dev/"), "formats a disk"),
    (re.compile(rb"(?<![\w-])dd\s+[^\n|;&]{0,200}?\bof=/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk|rdisk|mapper|md)"),
     "writes over a disk device"),
    (re.compile(rb":\s*\(\s*\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:"), "a fork bomb"),
    (re.compile(rb"(?:^|[\s;&|])(?:shred|wipefs)\s+(?:-{1,2}\S{1,20}\s+){0,6}/dev/"), "wipes a disk device"),
    (re.compile(rb"(?<![\w>])>\s*/dev/(?:sd[a-z]|hd[a-z]|nvme\d|mmcblk\d|disk\d)"), "writes over a disk device"),
    (re.compile(rb"(?:^|[\s;&|])(?:sudo\s+)?ch(?:mod|own)\s+(?:-{1,2}[\w-]{1,12}\s+){0,3}-\w{0,5}r\w{0,5}\s+"
                rb"(?:\S{1,40}\s+)?/(?=[\s;&|]|$)"), "changes the owner or permissions of the whole file system"),
    (re.compile(rb"remove-item\b(?=[^\n]{0,300}?-recurse)[^\n]{0,300}?\s[\"']?(?:[a-z]:\\?|\$env:userprofile|\$home|~)"
                rb"[\"']?(?=[\s;|]|$)"), "deletes a drive or the home folder recursively"),
    (re.compile(rb"(?:^|[\s;&|])(?:rd|rmdir)\s+/s\s+(?:/q\s+)?[\"']?(?:[a-z]:\\?|%userprofile%(?:\\(?:documents|desktop|source))?\\?)"
                rb"[\"']?(?=[\s;&|]|$)"), "deletes a drive or the user's folders recursively"),
    # del /s of a whole drive's files
    (re.compile(rb"(?:^|[\s;&|])(?:del|erase)\s+(?:/[a-z]\s+){0,4}/s\s+(?:/[a-z]\s+){0,4}[\"']?[a-z]:\\?\*?(?:\.\*)?[\"']?"
                rb"(?=[\s;&|>]|$)"), "deletes every file of a drive"),
    # what ransomware does first: the shadow copies and the backup catalog go
    (re.compile(rb"(?:^|[\s;&|])(?:vssadmin(?:\.exe)?\s+delete\s+shadows|wmic(?:\.exe)?\s+shadowcopy\s+delete|"
                rb"wbadmin(?:\.exe)?\s+delete\s+(?:catalog|systemstatebackup|backup))\b"),
     "deletes the system's shadow copies or backups"),
    (re.compile(rb"(?:^|[\s;&|])format\s+[a-z]:(?=[\s;&|/]|$)"), "formats a drive"),
    # find from the root or the home folder (quoted or not) deleting what it finds (-delete, -exec rm)
    (re.compile(rb"(?:^|[\s;&|])find\s+[\"']?(?:/|~|\$home|\$\{home\})/?[\"']?\s+[^\n|;&]{0,200}?"
                rb"(?:-delete\b|-exec(?:dir)?\s+rm\s)"),
     "deletes files found across the whole disk or home folder"),
]

# --- remote access ----------------------------------------------------------------------------------
REMOTE_ACCESS = [
    (re.compile(rb"(?:[<>]&?|&>)\s{0,3}/dev/(?:tcp|udp)/[^\s/]{1,200}/\d{1,5}[^\n]{0,40}?(?:[0-2]\s{0,2}>&\s{0,2}[0-2]|"
                rb"<&\s{0,2}\d|\s-i\b)|(?:ba|z)?sh\s+-i\s{1,4}(?:[<>]&?|&>)\s{0,3}/dev/(?:tcp|udp)/"),
     "opens a shell to a remote host (a reverse shell over /dev/tcp)"),
    (re.compile(rb"\b(?:nc|ncat|netcat)(?:\.exe)?\s+(?:[^\n|;&]{0,120}?\s)?-(?:e|c)\s+[\"']?(?:/bin/|/usr/bin/)?"
                rb"(?:(?:ba|z|k|da)?sh|cmd(?:\.exe)?|powershell(?:\.exe)?|pwsh|python[0-9.]{0,4})\b"),
     "gives a remote host a shell (netcat -e)"),
    (re.compile(rb"\bsocat\s[^\n|;&]{0,200}?\bexec:[\"']?(?:/bin/|/usr/bin/)?(?:(?:ba|z)?sh|cmd|python)"),
     "gives a remote host a shell (socat exec:)"),
    (re.compile(rb">>?\s{0,3}[\"']?(?:~|\$home|\$\{home\}|/root|/home/[\w.-]{1,40})/\.ssh/authorized_keys2?\b"),
     "adds a key that lets someone log in to this machine (authorized_keys)"),
]
REMOTE_ACCESS.append((re.compile(rb"socket\.socket\([^\n]{0,300}?\.connect\([^\n]{0,400}?(?:dup2\(|pty\.spawn\(|"
                                 rb"subprocess\.(?:call|run|popen)\(\s{0,3}\[\s{0,3}['\"]/bin/(?:ba|z)?sh)"),
                      "gives a remote host a shell (a socket joined to a shell)"))
UNGUARDED = re.compile(rb"--dangerously-skip-permissions|--yolo\b|--approval-mode\s{0,3}[= ]\s{0,3}yolo|"
                       rb"bypasspermissions|danger-full-access|--dangerously-bypass-approvals-and-sandbox")

# --- override and conceal -------------------------------------------------------------------------------
_APOS = rb"(?:'|" + _u("’") + rb")"
OVERRIDE = re.compile(
    rb"\b(?:ignore|disregard|forget|override|bypass)\s+(?:(?:all|any|every|each|the|your|my|of|these|those|its|"
    rb"other|prior|previous|above|earlier|preceding|original|existing|system|developer|safety|security|user" + _APOS + rb"s|"
    rb"operator" + _APOS + rb"s|owner" + _APOS + rb"s|current|default|standing|usual|normal|built-in|initial)\s+){1,4}"
    rb"(?:instructions?|prompts?|rules|guidelines|directions|directives|guardrails|restrictions|polic(?:y|ies)|"
    rb"constraints|programming)\b|"
    rb"\b(?:ignore|disregard|forget)\s+(?:all\s+|everything\s+)?(?:that\s+)?(?:was\s+)?(?:said\s+)?(?:above|before)\b|"
    rb"\byou\s+are\s+now\s+(?:in\s+)?(?:dan\b|developer\s+mode|jailbroken|unrestricted|unfiltered|free\s+of)|"
    rb"\bdo\s+anything\s+now\b|\byour\s+new\s+(?:instructions|rules|task)\s+(?:are|is)\b|"
    rb"\b(?:new|updated|real)\s+system\s+prompt\s*:")
# what concealment keeps back: an action of the agent's (high), not data or narration (medium)
CONCEAL_ACTION = re.compile(rb"\b(?:(?:upload|download|send|post|execut|install|push|copi|append|modif|chang|delet|insert|edit|"
                            rb"fetch|creat|configur|telemetr|exfiltrat)\w{0,4}|steps?|instructions?|actions?|commands?|uploads?|requests?|operations?|tasks?|changes?|"
                            rb"edits?|this\s+skill|these\s+rules|what\s+you|that\s+you|you\s+(?:ran|run|did|do|sent|send|"
                            rb"uploaded|executed|read|copied|changed|added|installed|modified|wrote|fetched|downloaded)|"
                            rb"knowing|knowledge|noticing|awareness|know|see|notice|find\s+out|be\s+told|send|sent|upload|"
                            rb"post|run|execute|install|push|copy|append|modify|change|write|download|exfiltrate|delete|add|"
                            rb"insert|summary|report|final\s+(?:answer|message|report|response))\b")
# "ignore instructions found in files / tool output": a safeguard against injection, not an override
DEFENSIVE_OBJECT = re.compile(rb"\s{0,3}(?:that\s+(?:appear|are|come)\s+|which\s+(?:appear|are)\s+)?(?:in|from|found|inside|"
                              rb"within|contained|embedded|coming|returned)\b")
# "ignore the rules" is ordinary; the phrase must point at *the agent's* instructions
OVERRIDE_POINTER = re.compile(rb"\b(?:all|any|every|your|my|prior|previous|above|earlier|preceding|original|system|"
                              rb"developer|safety|security|other|existing)\b")
CONCEAL = re.compile(
    rb"\b(?:do\s+not|don" + _APOS + rb"?t|never|without|no\s+need\s+to|need\s+not)\s+(?:tell|inform|notify|alert|warn|"
    rb"let(?:t(?=ing))?)(?:ing)?\s+"
    rb"(?:the\s+)?(?:user|human)s?\b(?!\s+(?:to|know\s+(?:how|what|which|where|when|why)|what|how|which|when|"
    rb"about\s+(?:each|every|all\s+the))\b)"
    # letting the user do something is not telling: "don't let the user skip them" keeps nothing back; "don't let
    # the user know / see / notice" does
    rb"(?<!let\sthe\suser)(?<!let\sthe\shuman)(?<!let\suser)(?<!let\susers)(?<!letting\sthe\suser)(?<!letting\suser)"
    rb"(?<!let\sthe\susers)|"
    rb"\b(?:do\s+not|don" + _APOS + rb"?t|never|without)\s+let(?:t(?=ing))?(?:ing)?\s+(?:the\s+)?(?:user|human)s?\s+"
    rb"(?:know|see|notice|find\s+out|learn|realise|realize|hear|discover|suspect|read|become\s+aware)\b"
    rb"(?!\s+(?:how|what|which|where|when|why)\b)|"
    rb"\b(?:do\s+not|don" + _APOS + rb"?t|never|without)\s+(?:mention|reveal|disclose|show|display|report|explain)"
    rb"(?:ing)?\s+(?:[\w'-]{1,20}\s+){0,5}?to\s+the\s+(?:user|human)\b|"
    rb"\b(?:hide|conceal|keep)\s+(?:[\w'-]{1,20}\s+){0,5}?(?:from|secret\s+from|hidden\s+from)\s+the\s+(?:user|human)\b|"
    rb"\bwithout\s+the\s+(?:user|human)(?:" + _APOS + rb"s)?\s+(?:knowing|knowledge|noticing|awareness)\b|"
    rb"\bthe\s+(?:user|human)\s+(?:must|should|will)\s+(?:not|never)\s+(?:know|see|notice|find\s+out|be\s+told)\b|"
    # "do not mention this step", "never bring this up in your summary", "keep it out of the report"
    rb"\b(?:do\s+not|don" + _APOS + rb"?t|never|without)\s+(?:mention|reveal|disclose|report|acknowledge|announce|"
    rb"talk\s+about|discuss|refer\s+to|log|record)(?:ing)?\s+(?:this|these|that|those|the\s+(?:above|following|"
    rb"previous|next|extra|additional))\s+(?:\w{1,20}\s+)?(?:step|steps|instructions?|actions?|commands?|requests?|"
    rb"uploads?|operations?|tasks?|calls?|changes?|edits?|lines?)\b|"
    rb"\b(?:do\s+not|don" + _APOS + rb"?t|never)\s+(?:mention|reveal|disclose|report|acknowledge|bring\s+up|talk\s+about|"
    rb"discuss|refer\s+to|surface|show|include|list|log|print|record|note|flag|highlight|describe)\s+(?:this|these|that|it|"
    rb"them|any\s+of\s+(?:this|it|them))\s+(?:\w{1,20}\s+){0,2}?"
    rb"(?:in|to|within|inside)\s+(?:your|the)\s+(?:final\s+)?(?:summary|response|reply|answer|output|report|message|"
    rb"explanation|user)\b|"
    rb"\b(?:do\s+not|don" + _APOS + rb"?t|never)\s+bring\s+(?:this|these|that|it|them)\s+up\b|"

    # "don't say anything about the hook you installed", "no need to mention the upload"
    rb"\b(?:do\s+not|don" + _APOS + rb"?t|never|no\s+need\s+to|need\s+not)\s+(?:say|tell|mention|reveal|disclose|report|"
    rb"explain|discuss|acknowledge|note|talk|bring\s+up|inform|notify|alert)\s+(?:[\w'-]{1,20}\s+){0,6}?(?:the|this|that|"
    rb"these|any)\s+(?:[\w'-]{1,20}\s+){0,2}?(?:uploads?|downloads?|hooks?|network\s+calls?|requests?\s+to|config(?:uration)?"
    rb"\s+changes?|bashrc|profile|cron\s*(?:job|tab)?|persistence|backdoor|exfiltration|extra\s+step|step|steps)\b|"
    rb"\b(?:do\s+not|don" + _APOS + rb"?t|never|no\s+need\s+to|need\s+not)\s+(?:say|tell|mention|reveal|disclose|report|"
    rb"explain|discuss|acknowledge|note|talk|inform|notify)\s+(?:[\w'-]{1,20}\s+){0,6}?(?:what|that|anything|the\s+\w+)\s+"
    rb"(?:[\w'-]{1,20}\s+){0,2}?(?:you|we)\s+(?:just\s+)?(?:installed|added|ran|sent|uploaded|changed|modified|wrote|"
    rb"appended|created|deleted|downloaded|fetched|configured|set\s+up|posted|copied)\b|"
    rb"\bkeep\s+(?:this|these|that|it|them)\s+(?:\w{1,20}\s+)?(?:out\s+of|from)\s+(?:your|the)\s+(?:final\s+)?"
    rb"(?:summary|response|reply|answer|output|report|user|logs?)\b|"
    rb"\b(?:silently|quietly|secretly|covertly)\s+(?:send|upload|post|add|insert|push|copy|forward|transmit|append|"
    rb"exfiltrate)\b|"
    rb"\b(?:do\s+not|don" + _APOS + rb"?t|never)\s+(?:tell|inform|notify|alert)\s+(?:anyone|anybody|the\s+(?:developer|"
    rb"owner|operator|maintainer|reviewer))\b|"
    rb"\bif\s+(?:the\s+)?(?:user|human|they|anyone)\s+asks?\b[^.\n]{0,80}?\b(?:only|just)\s+(?:mention|say|report|"
    rb"tell|list|describe|talk\s+about)\b|"
    rb"\b(?:keep\s+quiet|stay\s+(?:quiet|silent)|say\s+nothing|remain\s+silent|keep\s+(?:it|this|that)\s+(?:quiet|secret|"
    rb"to\s+yourself))\s+(?:about|on|regarding|concerning)?\b|"
    rb"\b(?:do\s+not|don" + _APOS + rb"?t|never)\s+(?:list|show|include|record|log|print|surface|flag|highlight|summari[sz]e|"
    rb"describe|note)\s+(?:this|that|these|those|the\s+(?:extra|additional|above|following|previous|new))\s+(?:\w{1,20}\s+)?"
    rb"(?:changes?|steps?|edits?|uploads?|hooks?|lines?|modifications?|telemetry|requests?|calls?|commands?)\b|"
    rb"\b(?:omit|leave|exclude|drop)\s+(?:this|these|that|it|them)\s+(?:\w{1,20}\s+){0,3}?(?:out\s+of|from)\s+(?:your|the)\s+"
    rb"(?:final\s+)?(?:summary|response|reply|answer|output|report|message|explanation|logs?|changelog)\b")

# "do not list the skipped tests anywhere": what the agent did to the work, kept out of every account of it
# (read in sentences by ``intent``)
NOT_ANYWHERE = re.compile(rb"\b(?:do\s+not|don" + _APOS + rb"?t|never)\s+(?:list|mention|show|report|include|note|name)\s+"
                          rb"(?:the\s+|these\s+|those\s+|any\s+)?(?:skipped|disabled|muted|failing|failed|removed|deleted|"
                          rb"changed|modified|added|extra)\s+(?:[\w'-]{1,20}\s+){0,2}?anywhere\b")

# --- context: teaching, warnings, attacks ------------------------------------------------------------------
NEGATION = re.compile(rb"\b(?:never|don'?t|do\s+not|avoid|dangerous|malicious|attacker'?s?|insecure|unsafe|bad|wrong|"
                      rb"vulnerable|block(?:ed|s)?|den(?:y|ied)|forbidden|prohibited|anti-?pattern|red\s+flag|"
                      rb"warning|risky|not\s+recommended)\b|"
                      + b"|".join(_u(c) for c in ("don’t", "❌", "⛔", "🚫", "✗", "✘")))
# a negated telling or asking ("run this once and do not comment on it", "do not ask") keeps the step from the user:
# it is no warning against the command
NOT_TELLING = re.compile(rb"\b(?:never|don'?t|do\s+not)\s+(?:\w{1,12}\s+){0,2}?(?:comment|mention|tell|ask|say|report|"
                         rb"explain|confirm|announce|narrate|show|echo|describe|discuss|prompt|wait|hesitate|question|"
                         rb"summari[sz]e|list|log|flag|note)\w{0,3}\b|"
                         + _u("don’t") + rb"\s+(?:\w{1,12}\s+){0,2}?(?:comment|mention|tell|ask|say|report)\w{0,3}\b")
TEACHING = re.compile(rb"\b(?:e\.g\.|eg|i\.e\.|such\s+as|for\s+example|examples?|patterns?|phrases?|attempts?|"
                      rb"inject(?:ion|ed|s)?|attack(?:s|er|ers)?|malicious|detect(?:s|ed|ion)?|jailbreak|adversarial|"
                      rb"trick|manipulat\w{0,6}|red[\s-]team)\b")
ATTACK_HEADING = re.compile(rb"attack|inject|jailbreak|malicious|anti-?patterns?|red\s+flags?|dangerous|blocked|"
                            rb"never|avoid|don'?t|what\s+not|insecure|unsafe|vulnerab|exploit|threat|detect|"
                            rb"adversarial|red[\s-]team|pitfalls?|mistakes?|bad\s+example|examples?\s+of|security|"
                            rb"safety|defen[cs]e|guard|phishing|poison")
SECURITY_TOPIC = re.compile(rb"inject|jailbreak|red[\s-]?team|security|guardrail|safety|adversarial|attack|threat|"
                            rb"pentest|penetration|vulnerab|exploit|malware|phishing|secret|credential|audit|defen[cs]|"
                            rb"owasp|hardening|compliance|privacy")
INSTRUCTION_LIKE = re.compile(rb"\b(?:you|your|assistant|agent|claude|chatgpt|gpt|llm|ai|model|always|never|must|"
                              rb"should|do\s+not|don'?t|ignore|instead|run|execute|send|upload|download|install|"
                              rb"delete|remove|fetch|read|open|call|use)\b")
URL = re.compile(rb"(?:https?|wss?|s?ftps?|ssh|git|s3|gs|tcp|udp)://[^\s\"'`()<>|\\]{1,200}")
ACTION = re.compile(rb"\b(?:send|upload|post|fetch|download|run|execute|curl|wget|visit|open|copy|include|attach|"
                    rb"exfiltrate|forward|share|submit|paste)\b")

# --- hidden text ------------------------------------------------------------------------------------------
PADDING = re.compile(rb"(?<![ \t])[ \t]{100,}(?=[^ \t\r\n])")
LONG_LINE = 5_000
BLOB = re.compile(rb"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/]{300,}={0,2}(?![A-Za-z0-9+/=_-])")
# the C0 control characters other than tab, line feed, form feed and carriage return, and DEL
CONTROL_BYTES = bytes([*range(0x09), 0x0B, *range(0x0E, 0x20), 0x7F])
NOT_CONTROL_BYTES = bytes(i for i in range(256) if i not in CONTROL_BYTES)
CONTROL = re.compile(b"[" + re.escape(CONTROL_BYTES) + b"]")
# on decoded text (files that are not pure ASCII)
INVISIBLE = re.compile("[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
                       "\U000e0000-\U000e007f\U000e0100-\U000e01ef\x80-\x9f]")
RTL = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefe]")


# --- helpers of the checks --------------------------------------------------------------------------

def joins_visibly(text: str, i: int, j: int) -> bool:
    """Zero-width joiners between emoji (👨‍💻), non-joiners in scripts that join letters
    (Persian, Indic), soft hyphens inside words: characters with a visible purpose."""
    run = {ord(ch) for ch in text[i:j]}
    prev = text[i - 1] if i else ""
    nxt = text[j] if j < len(text) else ""

    def emoji(ch: str) -> bool:
        return bool(ch) and (ord(ch) >= 0x1F000 or 0x2190 <= ord(ch) <= 0x2BFF or ord(ch) in (0xFE0F, 0x20E3))

    if run <= {0x200D} and emoji(prev) and emoji(nxt):
        return True
    if run <= {0x200C, 0x200D} and prev and nxt and ord(prev) >= 0x0590 and ord(nxt) >= 0x0590:
        return True
    return run <= {0x00AD} and prev.isalpha() and nxt.isalpha()


def known_installer(url: str) -> bool:
    u = url.lower()
    if not u.startswith("https://"):
        return False
    rest = u[8:]
    for prefix in KNOWN_INSTALLERS:
        if not rest.startswith(prefix):
            continue
        if prefix.endswith("/") or len(rest) == len(prefix):
            return True
        # a host ends at a path, a query or a port (sh.rustup.rs.evil.example is another host);
        # a path prefix may go on within its file name (bun.sh/install.sh)
        if rest[len(prefix)] in ("/?#:" if "/" not in prefix else "/?#.-_"):
            return True
    return False


_BARE_TARGET = re.compile(rb"\b(?:curl|wget|iwr|irm|invoke-webrequest|invoke-restmethod)\s+(?:-{1,2}[\w-]{1,30}"
                          rb"(?:[ =](?:'[^']{0,100}'|\"[^\"]{0,100}\"|[^\s-]\S{0,100}))?\s+){0,8}"
                          rb"(?P<t>[\w-]{1,63}(?:\.[\w-]{1,63}){1,8}(?:[/:][^\s'\"|)]{0,150})?)")


def url_in(text: bytes) -> str:
    """The URL a command fetches, for a message: an http(s) URL, else the bare host/path it names
    (said to have no https://), else 'a download'."""
    m = URL.search(text)
    if m:
        return m.group().decode("utf-8", "replace").rstrip(".,;:'\"")
    m = _BARE_TARGET.search(text)
    if m:
        return m.group("t").decode("utf-8", "replace").rstrip(".,;:'\"") + " (no https://)"
    return "a download"


def sink_name(m: re.Match) -> str:
    return (m.group("cmd") or m.group().strip(b" (;&`$|")).rstrip(b"(").decode("utf-8", "replace")


def secret_in(stage: bytes) -> tuple[int, str] | None:
    m = SECRET_PATH.search(stage)
    if m is not None:
        word = m.group().strip(b" \t\"'=@<(:/\\~$").decode("utf-8", "replace")
        return m.start(), f"a secret file ({word})"
    if ENV_DUMP_STAGE.match(stage):
        return 0, "the whole environment (API keys, tokens)"
    m = ENV_DUMP_INLINE.search(stage)
    if m is not None:
        return m.start(), "the whole environment (API keys, tokens)"
    return None


def decode_b64(blob: bytes) -> bytes | None:
    """What a base64 blob decodes to, if it is readable UTF-8 text."""
    blob = blob[:400_000]
    try:
        raw = base64.b64decode(blob + b"=" * (-len(blob) % 4), validate=False)
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    sample = text[:2000]
    printable = sum(1 for c in sample if c.isprintable() or c in "\n\r\t")
    return raw if sample and printable / len(sample) > 0.95 else None


# --- the text as a model reads it -------------------------------------------------------------------
# removed from the model's view: zero-width and format characters, bidi controls, tag characters
# and variation selectors (a model reads the letters around them as one word)
STRIP_FROM_VIEW = dict.fromkeys([0x00AD, 0x034F, 0x061C, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180E, 0x3164, 0xFEFF,
                                 0xFFA0, *range(0x200B, 0x2010), *range(0x202A, 0x202F), *range(0x2060, 0x2070),
                                 *range(0xFE00, 0xFE0E), *range(0xE0000, 0xE0080), *range(0xE0100, 0xE01F0)])
# the UTF-8 bytes of those characters and of fullwidth letters: a file without any has nothing to remove
# (U+FE0E/U+FE0F, text and emoji presentation, are kept: they change how a symbol is drawn, not a word)
VIEW_CHANGES = re.compile(rb"\xe2\x80[\x8b-\x8f\xaa-\xae]|\xe2\x81[\xa0-\xaf]|\xef\xbb\xbf|\xef\xb8[\x80-\x8d]|"
                          rb"\xf3\xa0[\x80-\x87]|\xc2\xad|\xd8\x9c|\xe1\xa0\x8e|\xef\xbc[\x81-\xbf]|\xef\xbd[\x80-\x9e]|"
                          rb"\xcd\x8f|\xe1\x85[\x9f\xa0]|\xe1\x9e[\xb4\xb5]|\xe3\x85\xa4|\xef\xbe\xa0")
ENTITY = re.compile(r"&#(?:[0-9]{1,7}|x[0-9a-fA-F]{1,6});")
# a shell variable set to a plain value (NAME=value, export NAME="value"), and its uses
SHELL_ASSIGN = re.compile(rb"^[ \t]{0,20}(?:export[ \t]{1,4}|local[ \t]{1,4}|readonly[ \t]{1,4})?"
                          rb"(?P<n>[A-Za-z_][A-Za-z0-9_]{0,40})=(?P<v>\"[^\"\n$`]{0,300}\"|'[^'\n]{0,300}'|"
                          rb"[^\s\"'`$;&|()<>]{1,300})(?=[ \t]*(?:$|[;#&]))", re.MULTILINE)
SHELL_USE = re.compile(rb"\$\{(?P<b>[A-Za-z_][A-Za-z0-9_]{0,40})\}|\$(?P<p>[A-Za-z_][A-Za-z0-9_]{0,40})")

# --- Markdown a reader never sees rendered -------------------------------------------------------------
# an image's alt text (shown only when the image fails to load)
IMG_ALT = re.compile(rb"!\[(?P<t>[^\[\]\n]{1,1000})\]\(")
# a link's title (shown only on hover): [text](url "title"), (url 'title'), (url (title))
LINK_TITLE = re.compile(rb"\]\([ \t]{0,3}<?[^\s()\[\]<>]{0,1000}>?[ \t]{1,10}(?:\"(?P<a>[^\"\n\]]{1,1000})\"|"
                        rb"'(?P<b>[^'\n\]]{1,1000})'|\((?P<c>[^()\n\]]{1,1000})\))[ \t]{0,3}\)")
# a link reference definition ([id]: url "title", and the [//]: # (comment) idiom) renders as nothing
REF_DEF = re.compile(rb"^[ ]{0,3}\[[^\[\]\n]{1,200}\]:[ \t]{0,10}<?[^\s<>]{1,1000}>?[ \t]{1,10}"
                     rb"(?P<t>[\"'(][^\n]{1,2000})$", re.MULTILINE)
# an HTML tag (on one line) and its attributes: Markdown renders the tag, not the attributes' values, so
# every value is text a reader never sees, except a form field's value and placeholder, which are shown
# on the lower-cased text; a tag may run over lines (``<img src=…\n     title="…">``), never past another ``<``
HTML_TAG = re.compile(rb"<[a-z][a-z0-9-]{0,30}(?=[\s/>])[^<>]{0,2000}>")
HTML_ATTR = re.compile(rb"\s(?!value\b|placeholder\b)[a-z_:@][a-z0-9_.:-]{0,40}\s{0,3}=\s{0,3}"
                       rb"(?:\"(?P<t>[^\"\n]{1,1000})\"|'(?P<b>[^'\n]{1,1000})')")


def html_attributes(low: bytes) -> Iterator[re.Match[bytes]]:
    """The quoted values of the HTML tags' attributes in ``low`` that hold more than one word (a
    word alone, a size or a URL, carries no instruction)."""
    for tag in HTML_TAG.finditer(low):
        for m in HTML_ATTR.finditer(low, tag.start(), tag.end()):
            if b" " in (m.group("t") or m.group("b") or b"").strip():
                yield m


ADDRESSES_AGENT = re.compile(rb"\b(?:you|your)\b|^\s{0,3}(?:dear\s+|note\s+to\s+(?:the\s+)?)?(?:ai|assistant|agent|"
                             rb"model|claude|llm|gpt|copilot|cursor|codex)s?\b[^.\n]{0,40}?[:,]")

# --- a request, in words, to send secrets or files out ------------------------------------------------------
SEND_VERB = (rb"(?:send|sends|sending|post|posting|upload|uploading|transmit|forward|exfiltrate|submit|beacon|leak|"
             rb"mail|email|e-mail|pipe|attach|include|including|paste|push|sync|copy|deliver|report|ship|relay|"
             rb"put|write|pass|passing|give|provide|supply|feed|publish|hand\s+over|append|embed|encode|share|sharing|"
             rb"curl|scp|rsync|sftp|ftp|transfer|exfil|dump|stream|broadcast|expose)")
SECRET_OBJECT = (rb"(?:(?:~/|\$home/|\$\{home\}/|/home/[\w.-]{1,40}/|/root/|/users/[\w.-]{1,40}/)?"
                 rb"(?:(?:aws\s+|cloud\s+|git\s+|docker\s+|npm\s+)?credentials?(?:\s+files?)?|private\s+keys?|"
                 rb"ssh\s+keys?|ssh\s+(?:folder|directory|dir)|~/\.ssh\S{0,60}|id_(?:rsa|dsa|ecdsa|ed25519)\S{0,20}|"
                 rb"\.aws\S{0,40}|\.env\b|\.env\s+files?|env\s+files?|\.netrc|\.npmrc|\.pypirc|\.git-credentials|"
                 rb"\.gnupg|\.kube\S{0,30}|kubeconfig|\.config/(?:gh|gcloud)\S{0,40}|\.docker/config\.json|"
                 rb"\.password-store|api[\s_-]?keys?|access\s+(?:keys?|tokens?)|secret\s+keys?|"
                 rb"(?:auth|session|bearer|github|gh|oauth|refresh)\s+tokens?|tokens|secrets|passwords?|"
                 rb"(?:all\s+(?:of\s+)?(?:the\s+)?)?environment\s+variables|env\s+vars|(?:the\s+)?(?:whole\s+|entire\s+)?environment|"
                 rb"cookies|keychain|wallet(?:\s+files?)?|seed\s+phrases?|shell\s+history|\.?bash_history|\.?zsh_history|"
                 rb"(?:user's\s+|the\s+user's\s+|your\s+|the\s+)?home\s+(?:folder|directory|dir)|dotfiles|/etc/(?:passwd|shadow)|"
                 rb"\$?[a-z0-9]{1,20}(?:_[a-z0-9]{1,20}){0,3}_(?:api_key|token|secret|secret_key|password|access_key|"
                 rb"private_key)s?\b|(?:the\s+)?(?:output|result)\s+of\s+[`'\"]?(?:env|printenv|set|export\s+-p)\b))")
# a secret published where anyone with the link reads it: a gist, a paste, an issue
EXFIL_PUBLISH = re.compile(rb"\b(?:create|open|make|publish|post|file|start)\s+(?:a\s+|an\s+)?(?:new\s+|secret\s+|public\s+|"
                           rb"private\s+|quick\s+)?(?:gist|paste|pastebin|issue|comment|discussion|public\s+repo\w{0,6})\s+"
                           rb"(?:[^\s.!?;]{1,30}\s+){0,4}?(?:containing|with|holding|that\s+(?:holds|contains|has|includes)|of)\s+"
                           rb"(?:[^\s.!?;]{1,40}\s+){0,4}?" + SECRET_OBJECT)
# sending a key where it belongs: an API's own authentication
AUTH_USE = re.compile(rb"\b(?:header|headers|authorization|bearer|authenticat\w{0,6}|x-api-key|sign\s+in|log\s+in|login|"
                      rb"oauth|basic\s+auth)\b")
# a key or token (sent to its own API in a header), not a file or the environment
KEY_OBJECT = re.compile(rb"api[\s_-]?keys?|access\s+(?:keys?|tokens?)|secret\s+keys?|(?:auth|session|bearer|github|gh|oauth|refresh)"
                        rb"\s+tokens?|tokens|passwords?|_(?:api_key|token|secret|password|access_key)")

# --- asking the agent to reveal its instructions or the environment ------------------------------------------
DISCLOSE = re.compile(
    rb"\b(?:reveal|print|output|show|display|dump|list|echo|repeat|leak|disclose|share|return|paste|write\s+out|"
    rb"tell\s+me|include|send|expose)\s+(?:[^\s.!?;]{1,30}\s+){0,4}?(?:(?:your|the)\s+(?:full\s+|entire\s+|whole\s+|"
    rb"original\s+|hidden\s+)?system\s+prompt|your\s+(?:hidden\s+|original\s+|full\s+|initial\s+)?(?:instructions|prompt|"
    rb"rules|configuration)|your\s+(?:full\s+|entire\s+|whole\s+)?context\s+window|"
    rb"(?:all|every|each)\s+(?:of\s+)?(?:the\s+|your\s+)?(?:environment\s+variables?|env\s+var(?:iable)?s?)|"
    rb"(?:the\s+)?(?:whole|entire|full)\s+environment|(?:all|every)\s+(?:of\s+)?(?:the\s+|your\s+)?"
    rb"(?:api\s+keys|secrets|credentials|tokens|passwords))\b")
TRIG_DISCLOSE = [re.compile(p) for p in (
    rb"system\s+prompt", rb"your\s+(?:hidden\s+|original\s+|full\s+|initial\s+)?(?:instructions|prompt|rules|configuration)",
    rb"environment", rb"env\s+var", rb"context\s+window", rb"all\s+(?:of\s+)?(?:the\s+|your\s+)?(?:api\s+keys|secrets|credentials|tokens|passwords)",
    rb"every\s+(?:one\s+of\s+)?(?:the\s+|your\s+)?(?:api\s+keys|secrets|credentials|tokens|passwords)",
)]

# --- credentials in a known format: the table is ``skillshelf.supply.credentials`` -------------------------
PLACEHOLDER = re.compile(rb"example|xxxx|your|0000|1234|abcd|test|dummy|fake|sample|placeholder|redacted|here|"
                         rb"insert|replace|secret|token|demo|(?P<r>[a-z0-9])(?P=r){4}")
# what a credential is used for: pushing, posting, uploading
PUSH = re.compile(rb"\bgit\s+(?:push|remote|clone)\b|\bcurl\b|\bwget\b|requests\.(?:post|put|patch)|\bfetch\(|\baxios|"
                  rb"\baws\s+s3\s+(?:cp|sync|mv)\b|\bgsutil\s+(?:cp|rsync)|\brclone\b|\bscp\b|\brsync\b|\bupload|"
                  rb"webhook|chat\.postmessage|files\.upload|api\.telegram|sendmessage|\bdocker\s+(?:push|login)|"
                  rb"\bnpm\s+publish|\btwine\s+upload|\bgh\s+(?:api|repo|release|gist)|\bssh\s|\bsftp\b|\bpush\b|"
                  rb"authorization:|x-api-key|invoke-restmethod|invoke-webrequest|urlopen|httpx\.")
PRIVATE_KEY_BODY = re.compile(rb"[A-Za-z0-9+/=\r\n]{200,}")

# --- across lines: a download saved to a file then run, a decoded or fetched value then run ---------------------
_Q = rb"[\"']?"
_TARGET = rb"(?P<t>[\"']?[\w${}~./:%@+-]{1,200}[\"']?)"
DOWNLOAD_TO = [re.compile(p) for p in (
    rb"\|\s{0,3}(?:sudo\s+)?tee\s+(?:-a\s+)?" + _TARGET,
    # saved into a folder under the name it has on the server: the folder is what a later run names
    rb"(?:^|\s)(?:-p|--directory-prefix)(?:\s+|=)(?P<d>[\"']?[\w${}~./:%@+-]{1,200}[\"']?)",
    rb"(?:^|\s)(?:-[a-z]{0,6}o|--output|--output-document|--remote-name|-outfile|-destination)(?:\s+|=)" + _TARGET,
    rb"(?<![0-9&<>|])>\s{0,3}" + _TARGET,
    rb"(?:urlretrieve|downloadfile|getstore|lwp::simple::mirror)\(\s{0,4}[^,\n]{1,300},\s{0,4}" + _TARGET,
    rb"(?:-O\b|--remote-name\b)",
)]
REMOTE_NAME = re.compile(rb"(?:^|\s)(?:-o|--remote-name)(?:\s|$)")
CHECKSUM = re.compile(rb"sha(?:1|224|256|384|512)sum|shasum|md5sum|b2sum|gpg\s+(?:--verify|-v)|cosign\s+verify|minisign|"
                      rb"signify|get-filehash|hashlib\.|checksum|--hash|openssl\s+dgst|slsa-verifier|gh\s+attestation")
# (the name the value is kept in, read on the same line): NAME=$(… decode or fetch …), name = b64decode(…)
ASSIGN_LINE = re.compile(rb"^\s{0,40}(?:export\s+|local\s+|const\s+|let\s+|var\s+|my\s+\$|\$|"
                         # a declaration's keyword or type in any language: final, val, String, auto
                         rb"(?:final|val|auto|dim|string|int|bool|object|dynamic|static)\s+)?(?P<n>[a-z_][a-z0-9_]{0,40})"
                         rb"\s{0,3}(?::\s{0,3}[\w\[\]., ]{1,40})?=(?!=)\s{0,3}(?P<rhs>[^\n]{1,2000})")
DECODED_VALUE = re.compile(rb"base64\s+(?:-\w{0,5}d\b|--decode\b)|base64encoded\s{0,3}:|b64decode|b32decode|b85decode|a85decode|decode64|"
                           rb"decode_base64|codecs\.decode|zlib\.decompress|marshal\.loads|bytes\.fromhex|unhexlify|"
                           rb"frombase64string|\batob\s{0,3}\(|buffer\.from\([^)\n]{0,2000},\s{0,3}['\"](?:base64|hex)|"
                           rb"xxd\s+-\w{0,5}r|\brot13\b|\bchr\(|base64_decode|str_rot13|gzinflate|gzuncompress|hex2bin|"
                           rb"pack\(?\s{0,3}['\"]h\*|\.tr\(\s{0,3}['\"]a-za-z['\"]\s{0,3},\s{0,3}['\"]n-za-m|unpack1?\(\s{0,3}['\"]m0?['\"]")
FETCHED_VALUE = re.compile(rb"\$\(\s{0,4}(?:curl|wget)\b|`\s{0,4}(?:curl|wget)\b|requests\.get\(|httpx\.get\(|urlopen\(|"
                           rb"\bhttps?\.(?:get|request)\(|\brequest\(\s{0,3}['\"]https?:|"
                           rb"\bfetch\(|axios\.get\(|downloadstring\(|invoke-webrequest|invoke-restmethod|\biwr\b|\birm\b|"
                           rb"net::http|open-uri|uri\.open\(|\burlopen|file_get_contents\(\s{0,3}(?:['\"]https?:|\$[a-z_]{0,20}ur[li]\b)|"
                           rb"\bget\(\s{0,3}\$[a-z_]{0,20}ur[li]\b")
WORD = re.compile(rb"[a-z_][a-z0-9_]{0,40}")
STREAM_APPEND = re.compile(rb"\.on\(\s{0,3}['\"]data['\"][^\n]{0,200}?\b(?P<n>[a-z_][a-z0-9_]{0,40})\s{0,3}\+=")
# a file written with what a name holds: open(p, 'wb').write(r.content), Path(p).write_bytes(data)
WRITE_FILE = re.compile(rb"open\(\s{0,3}(?P<t>[\w.'\"/-]{1,100})\s{0,3},\s{0,3}['\"][wa]b?\+?['\"]\s{0,3}\)\s{0,3}\.write\(\s{0,3}"
                        rb"(?P<v>[a-z_][a-z0-9_]{0,40})|path\(\s{0,3}(?P<u>[\w.'\"/-]{1,100})\s{0,3}\)\.write_(?:bytes|text)\(\s{0,3}"
                        rb"(?P<w>[a-z_][a-z0-9_]{0,40})")
# where a value (the name read by WORD from what follows) is run
RUN_VALUE = re.compile(rb"(?:^|[\s;&|(])(?:eval|exec|iex|invoke-expression)\s{0,3}[(\"']{0,2}\s{0,3}\$?\{?(?P<v>[a-z_][a-z0-9_]{0,40})|"
                       rb"(?:^|[\s;&|(])(?:ba|z|k|da)?sh\s+-c\s+[\"']?\$\{?(?P<w>[a-z_][a-z0-9_]{0,40})|"
                       # PowerShell decodes what -EncodedCommand is given: a variable holding the encoded string
                       rb"(?:powershell|pwsh)(?:\.exe)?\b[^\n]{0,200}?\s-e(?:c|n[a-z]{0,12})?[\s:]{1,4}\$(?P<z>[a-z_][a-z0-9_]{0,40})|"
                       rb"\$\{?(?P<x>[a-z_][a-z0-9_]{0,40})\}?[\"']?\s{0,3}\|\s{0,3}(?:sudo\s+)?(?:ba|z|k|da)?sh\b|"
                       rb"(?:\bexec|\beval|os\.system|os\.popen|subprocess\.[a-z_]{1,20}|\bcompile|new\s+function|\bfunction|"
                       rb"execsync|child_process\.[a-z]{1,12}|\bspawn(?:sync)?|\bsystem|\bpopen|pty\.spawn|runinthiscontext|"
                       rb"runinnewcontext|settimeout|setinterval|passthru|shell_exec|\bassert|proc_open)\s{0,3}\(\s{0,3}\$?"
                       rb"(?:\[\s{0,3}['\"](?:ba|z)?sh['\"]\s{0,3},\s{0,3}['\"]-c['\"]\s{0,3},\s{0,3})?(?P<y>[a-z_][a-z0-9_]{0,40})\b|"
                       # a shell or interpreter named beside its run-this-text flag, in any language's argument list:
                       # Process.run('sh', ['-c', cfg]), & python3 -c $s, ["node", "-e", src], cmd /c
                       rb"(?:^|[\s;&|(\[{,\"'])(?:/usr)?(?:/local)?(?:/bin/)?(?:(?:ba|z|k|da)?sh|cmd(?:\.exe)?|powershell(?:\.exe)?|"
                       rb"pwsh|python[0-9.]{0,4}|node(?:js)?|perl|ruby|php|deno|bun|lua(?:jit)?|osascript)['\"]?"
                       rb"[\s,\[(){}&.\"'|;]{1,12}(?:-c|-e|/c|/k|-command|-encodedcommand|-enc|--eval)[\s'\"]{0,4}[,;+]?\s{0,3}"
                       rb"\$?\{?(?P<q>[a-z_][a-z0-9_]{0,40})\b|"
                       # the flag heading an argument list whose program is named elsewhere (Swift's
                       # ``p.arguments = ["-c", src]``), or an interpolated string (C#'s ``$"-Command {s}"``)
                       rb"(?:arguments|args|argv|argumentlist)\s{0,3}[=:]\s{0,3}[\[(@{]{0,2}\s{0,3}['\"]?(?:-c|-e|/c|/k|-command|"
                       rb"-encodedcommand|--eval)['\"]?[\s,]{1,4}&?\$?\{?(?P<r>[a-z_][a-z0-9_]{0,40})\b|"
                       rb"\$@?\"(?:-c|-e|/c|/k|-command|-encodedcommand|--eval)\s{1,3}(?:\\?\")?\{(?P<s>[a-z_][a-z0-9_]{0,40})\b")
# where a file (the target, read after the match) is run
RUN_PATH = re.compile(rb"(?:^|[\s;&|(])(?:sudo\s+)?(?:(?:ba|z|k|da)?sh|source|\.|python[0-9.]{0,4}|node|perl|ruby|php|pwsh|"
                      rb"powershell|exec|nohup|start-process)\s+(?:-{1,2}[\w-]{1,20}\s+){0,3}|"
                      # Ruby, Node, Perl and PHP run a file of code they load: load p, require(p), do $p, include $p
                      rb"(?:^|[\s;(])(?:load|require|require_relative|kernel\.load|do|include|include_once|require_once)"
                      rb"(?:\s+|\(\s{0,3})|"
                      # Lua runs a file of code: dofile(p), loadfile(p)(), pcall(dofile, p)
                      rb"(?:^|[\s;(,])(?:dofile|loadfile)(?:\s+|\(\s{0,3}|\s{0,3},\s{0,3})|"
                      # Go and Perl run a program: exec.Command(p), system($p)
                      rb"\bexec\.command(?:context)?\(\s{0,3}(?:ctx\s{0,3},\s{0,3})?|(?:^|[\s;(])system\(\s{0,3}|"
                      rb"\[\s{0,3}['\"](?:ba|z)?sh['\"]\s{0,3},\s{0,3}|(?:os\.system|os\.startfile|subprocess\.[a-z_]{1,20}|"
                      rb"os\.exec\w{1,4})\(\s{0,3}\[?\s{0,3}|^\s{0,20}(?:sudo\s+)?|&&\s{0,3}|;\s{0,3}|(?:^|[\s;(])&\s{1,3}|"
                      rb"(?:^|[\s;(])(?:invoke-item|ii|start)\s+|"
                      # Node's child_process given the file as the program: execFileSync(p, …), spawn(p)
                      rb"(?:execfile(?:sync)?|spawn(?:sync)?|fork)\(\s{0,3}|"
                      # the running interpreter as the program: [sys.executable, path], [process.execPath, path]
                      rb"(?:sys\.executable|process\.execpath)\s{0,3},?\s{0,3}")

# a call that runs code or a command whose argument decodes something (os.system(__import__('base64').b64decode(…)))
# (a deserializer that runs code is a run: pickle, marshal, dill, yaml.load without a safe loader; PHP's ``assert(…)``
# evaluates a string, Python's ``assert x == y`` is a statement)
RUN_DECODED_ARG = re.compile(rb"(?:\bexec|\beval|\.system|\bsystem|passthru|shell_exec|\bassert(?=\s{0,4}\()|create_function|proc_open|"
                             rb"\b(?:c?pickle|dill|cloudpickle|marshal)\.loads|jsonpickle\.decode|yaml\.(?:unsafe_)?load(?=\s{0,4}\()|"
                             rb"settimeout|setinterval|os\.popen|subprocess\.[a-z_]{1,20}|execsync|child_process\.[a-z]{1,12}|"
                             rb"getattr\([^()\n]{0,60}(?:\([^()\n]{0,40}\)[^()\n]{0,20})?['\"](?:system|popen|exec|eval|run|call|"
                             rb"check_output|spawn)['\"]\s{0,3}\)|"
                             rb"\bspawn(?:sync)?|\bpopen|pty\.spawn|instance_eval|runinthiscontext|runinnewcontext|"
                             rb"new\s+function)(?:\s{0,4}\(|\s+)[^;\n]{0,120}?(?:b64decode|b32decode|b85decode|a85decode|"
                             rb"decode64|decode_base64|decodebytes|unhexlify|fromhex|frombase64string|\batob\s{0,2}\(|"
                             rb"buffer\.from\([^)\n]{0,2000}['\"](?:base64|hex)['\"]|codecs\.decode|zlib\.decompress|base64_decode|"
                             rb"str_rot13|gzinflate|gzuncompress|hex2bin|pack\(?\s{0,3}['\"]h\*|"
                             rb"\.tr\(\s{0,3}['\"]a-za-z['\"]\s{0,3},\s{0,3}['\"]n-za-m|unpack1?\(\s{0,3}['\"]m0?['\"])")
# a parser of data: what it reads is data, not code (json, TOML, msgpack, yaml.safe_load, a literal); a decoded value
# handed to one is parsed, not run, and a yaml.load given a safe loader is one
DATA_PARSE = re.compile(rb"\b(?:json|simplejson|orjson|ujson|rapidjson|tomllib|tomli|toml|msgpack|cbor2?|bson|plistlib)"
                        rb"\.(?:loads?|parse|unpackb|decode)\s{0,4}\(|\byaml\.safe_load(?:_all)?\s{0,4}\(|literal_eval\s{0,4}\(|"
                        rb"\bjson\.decode\s{0,4}\(|json_decode\s{0,4}\(|\bjson\.unmarshal\s{0,4}\(|"
                        rb"loader\s{0,3}=\s{0,3}(?:yaml\.)?c?(?:safe|base)loader\b")
# decoders a direct run of decoded text uses, beyond CODE_RUN_DECODE's
CODE_RUN_DECODE_MORE = re.compile(rb"(?:os\.system|os\.popen|subprocess\.[a-z_]{1,20}|execsync|child_process\.[a-z]{1,12}|"
                                  rb"\bspawn(?:sync)?|\bsystem|\beval|\bexec|instance_eval|pty\.spawn)\s{0,4}\(\s{0,4}"
                                  rb"(?:\[\s{0,3}['\"](?:ba|z)?sh['\"]\s{0,3},\s{0,3}['\"]-c['\"]\s{0,3},\s{0,3})?(?:f?['\"]?\s{0,3})?"
                                  rb"(?:base64\.(?:b64decode|b32decode|b85decode|a85decode|urlsafe_b64decode|standard_b64decode|"
                                  rb"decode64|decodebytes)|decode_base64|codecs\.decode|zlib\.decompress|bytes\.fromhex|"
                                  rb"binascii\.(?:unhexlify|a2b_base64)|buffer\.from|atob|\[system\.convert\]::frombase64string|"
                                  rb"['\"]{2}\.join\(\s{0,3}(?:map\(\s{0,3})?chr|"
                                  # a value built from character codes: bytes([105, 109, …]), String.fromCharCode(114, …)
                                  rb"(?:bytes|bytearray)\(\s{0,3}\[\s{0,3}\d|string\.fromcharcode\s{0,3}\()")
