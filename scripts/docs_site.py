#!/usr/bin/env python3
"""scripts/docs_site.py: the steps of scripts/docs (read that script's header first).

    docs_site.py build ROOT OUT               render the Markdown pages into OUT, keeping the repository's layout
    docs_site.py check OUT                    every relative link and #anchor of the rendered pages resolves
    docs_site.py browser OUT CHROMIUM [--api] every page opened in headless Chromium renders (its heading in the DOM)
    docs_site.py count OUT                    how many pages the browser step opened

Python-Markdown (Debian python3-markdown) for build; the standard library otherwise.
"""
from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
import threading
from functools import partial
from html.parser import HTMLParser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

START = ["README.md", "docs", "CONTRIBUTING.md", "CHANGELOG.md"]
TEMPLATE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} - appstoreserver</title>
<style>
body {{ font: 16px/1.5 system-ui, sans-serif; max-width: 60rem; margin: 0 auto; padding: 1rem 2rem; color: #1f2328; }}
nav {{ border-bottom: 1px solid #d0d7de; padding-bottom: .5rem; margin-bottom: 1rem; }} nav a {{ margin-right: 1rem; }}
pre {{ background: #f6f8fa; padding: .8rem; overflow-x: auto; }} code {{ font: 14px ui-monospace, monospace; }}
table {{ border-collapse: collapse; }} th, td {{ border: 1px solid #d0d7de; padding: .3rem .6rem; vertical-align: top; }}
</style></head>
<body><nav><a href="{up}index.html">appstoreserver</a><a href="{up}docs/README.html">Documentation</a><a href="{up}api/index.html">API reference</a></nav>
<main>
{body}
</main></body></html>
"""


def gh_slug(value: str, separator: str = "-") -> str:
    """GitHub's heading anchors: lower case, punctuation dropped, each space a hyphen."""
    value = re.sub(r"<[^>]+>", "", html.unescape(value)).strip().lower()
    value = re.sub(r"[^\w\- ]", "", value)
    return value.replace(" ", separator)


def out_name(rel: str) -> str:
    """The site path of a repository file: Markdown becomes .html, the top README the site's index."""
    if rel == "README.md":
        return "index.html"
    return rel[:-3] + ".html" if rel.endswith(".md") else rel


def build(root: str, out: str) -> int:
    import markdown
    queue = []
    for s in START:
        p = os.path.join(root, s)
        queue += sorted(os.path.relpath(os.path.join(p, f), root) for f in os.listdir(p) if f.endswith(".md")) \
            if os.path.isdir(p) else [s]
    done, copied, listed = set(), set(), set()
    href_re = re.compile(r'(href|src)="([^"]+)"')
    while queue:
        rel = queue.pop(0)
        if rel in done:
            continue
        done.add(rel)
        text = open(os.path.join(root, rel), encoding="utf-8").read()
        md = markdown.Markdown(extensions=["tables", "fenced_code", "toc", "sane_lists"],
                               extension_configs={"toc": {"slugify": gh_slug}})
        body = md.convert(text)
        here = os.path.dirname(rel)

        def rewrite(m):
            attr, target = m.group(1), html.unescape(m.group(2))
            parts = urlsplit(target)
            if parts.scheme or parts.netloc or target.startswith("#") or not parts.path:
                return m.group(0)
            path = os.path.normpath(os.path.join(here, unquote(parts.path)))
            if path.startswith("..") and attr == "href":
                # Outside the repository (the project's shared references): not part of the site; the text stays.
                return f'title="outside this repository: {html.escape(target)}"'
            if path.startswith(".."):
                return m.group(0)              # the check reports it
            full = os.path.join(root, path)
            if os.path.isdir(full):
                readme = os.path.join(path, "README.md")
                if os.path.isfile(os.path.join(root, readme)):
                    queue.append(readme)
                    new = out_name(readme)
                else:
                    listed.add(path)
                    new = os.path.join(path, "index.html") if path != "." else "index.html"
            elif path.endswith(".md") and os.path.isfile(full):
                queue.append(path)
                new = out_name(path)
            else:
                if os.path.isfile(full):
                    copied.add(path)
                new = path
            link = os.path.relpath(new, here or ".") + (f"#{parts.fragment}" if parts.fragment else "")
            return f'{attr}="{html.escape(link)}"'

        body = href_re.sub(rewrite, body)
        title = re.search(r"<h1[^>]*>(.*?)</h1>", body, re.S)
        up = os.path.relpath(".", here or ".")
        up = "" if up == "." else up + "/"
        page = TEMPLATE.format(title=re.sub(r"<[^>]+>", "", title.group(1)) if title else rel, body=body, up=up)
        dest = os.path.join(out, out_name(rel))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest, "w", encoding="utf-8") as f:
            f.write(page)
    for rel in sorted(copied):
        dest = os.path.join(out, rel)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(os.path.join(root, rel), dest)
    for rel in sorted(listed):
        names = sorted(n for n in os.listdir(os.path.join(root, rel)) if not n.startswith("."))
        items = []
        for n in names:
            src = os.path.join(root, rel, n)
            if os.path.isfile(src):
                os.makedirs(os.path.join(out, rel), exist_ok=True)
                target = out_name(os.path.join(rel, n)) if n.endswith(".md") else os.path.join(rel, n)
                if not n.endswith(".md"):
                    shutil.copyfile(src, os.path.join(out, rel, n))
                elif os.path.join(rel, n) not in done:
                    continue
                items.append(f'<li><a href="{html.escape(os.path.relpath(target, rel))}">{html.escape(n)}</a></li>')
            else:
                items.append(f"<li>{html.escape(n)}/</li>")
        up = os.path.relpath(".", rel) + "/"
        body = f"<h1>{html.escape(rel)}/</h1>\n<ul>\n" + "\n".join(items) + "\n</ul>"
        os.makedirs(os.path.join(out, rel), exist_ok=True)
        with open(os.path.join(out, rel, "index.html"), "w", encoding="utf-8") as f:
            f.write(TEMPLATE.format(title=html.escape(rel), body=body, up=up))
    print(f"docs: {len(done)} Markdown pages, {len(copied)} files copied, {len(listed)} folder listings")
    return 0


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.links, self.h1, self._in_h1 = set(), [], "", False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("name"):
            self.ids.add(a["name"])
        for k in ("href", "src"):
            if a.get(k):
                self.links.append(a[k])
        if tag == "h1" and not self.h1:
            self._in_h1 = True

    def handle_endtag(self, tag):
        if tag == "h1":
            self._in_h1 = False

    def handle_data(self, data):
        if self._in_h1:
            self.h1 += data


def our_pages(out: str):
    for d, _, files in os.walk(out):
        rel = os.path.relpath(d, out)
        if rel == "api" or rel.startswith("api" + os.sep):
            continue                      # generated by Doxygen, DocC and pdoc: their own pages, their own links
        for f in files:
            if f.endswith(".html"):
                yield os.path.relpath(os.path.join(d, f), out)


def parse(path: str) -> Links:
    p = Links()
    p.feed(open(path, encoding="utf-8", errors="replace").read())
    return p


def check(out: str) -> int:
    pages = sorted(our_pages(out))
    parsed = {p: parse(os.path.join(out, p)) for p in pages}
    broken, n = [], 0
    for page, info in parsed.items():
        for link in info.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc:
                continue
            n += 1
            target = page if not parts.path else os.path.normpath(os.path.join(os.path.dirname(page), unquote(parts.path)))
            if parts.path.endswith("/"):
                target = os.path.join(target, "index.html")
            if target.startswith("..") or not os.path.exists(os.path.join(out, target)):
                broken.append(f"{page}: {link} (no {target})")
                continue
            if parts.fragment and target in parsed and unquote(parts.fragment) not in parsed[target].ids:
                broken.append(f"{page}: {link} (no id '{parts.fragment}' in {target})")
    for b in broken:
        print("broken link:", b)
    print(f"{len(pages)} pages, {n} links checked" + (f", {len(broken)} broken" if broken else ""))
    return 1 if broken else 0


def browser(out: str, chromium: str, api: bool) -> int:
    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass
    handler = partial(Quiet, directory=out)
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    # (page, text its rendered DOM must contain): our pages their heading; the reference's entry pages their content.
    todo = [(p, parse(os.path.join(out, p)).h1.strip()) for p in sorted(our_pages(out))]
    if api:
        todo += [("api/index.html", "API reference"), ("api/c/index.html", "appstoreserver"),
                 ("api/python/appstoreserver.html", "appstoreserver"),
                 # DocC's router takes the folder's URL (with index.html it shows "page not found")
                 ("api/swift/documentation/appstoreserver/", "SignedDataVerifier")]
    failed = []
    profile = os.path.join(out, ".chromium-profile")
    for page, want in todo:
        if not os.path.exists(os.path.join(out, page, "index.html") if page.endswith("/") else os.path.join(out, page)):
            failed.append(f"{page}: missing")
            continue
        try:
            r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                                f"--user-data-dir={profile}", "--virtual-time-budget=5000", "--dump-dom", base + page],
                               capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            failed.append(f"{page}: Chromium did not finish in 120 s")
            continue
        dom = html.unescape(re.sub(r"<[^>]+>", " ", r.stdout))
        dom = re.sub(r"\s+", " ", dom)
        if r.returncode != 0 or not want or re.sub(r"\s+", " ", want) not in dom:
            failed.append(f"{page}: rendered DOM lacks '{want}' (exit {r.returncode}) {r.stderr.strip()[-200:]}")
    server.shutdown()
    shutil.rmtree(profile, ignore_errors=True)
    with open(os.path.join(out, ".rendered"), "w") as f:
        f.write(str(len(todo) - len(failed)))
    for f in failed:
        print("does not render:", f)
    return 1 if failed else 0


def main(argv) -> int:
    if len(argv) >= 4 and argv[1] == "build":
        return build(argv[2], argv[3])
    if len(argv) == 3 and argv[1] == "check":
        return check(argv[2])
    if len(argv) >= 4 and argv[1] == "browser":
        return browser(argv[2], argv[3], "--api" in argv[4:])
    if len(argv) == 3 and argv[1] == "count":
        print(open(os.path.join(argv[2], ".rendered")).read().strip())
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
