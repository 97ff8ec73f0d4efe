"""Lab files: loading, checking and running them.

A lab is a YAML file (UTF-8, spaces only, at most 1 MiB)::

    name: ESP basics                  # required: the title
    description: |                    # required: what a student needs to follow it alone
      ...
    device: en7581                    # optional; the only device for now
    seed: 0x5eed                      # optional (default 0x5eed): every IV, MAC, sequence start
    steps:                            # required, at least one
      - name: send one packet         # required, unique in the lab
        explain: |                    # optional: shown before the step in step mode
          ...
        run: send ap wan IP(dst="192.0.2.2")/UDP()   # required: one REPL command line
        expect:                       # optional: PATH: EXPECTATION, all must hold
          delivered: true
          stages[-1].tap: host.deliver
          stages[tap=host.xfrm].counters.XfrmInStateSeqError: 1
          dropped: {contains: "already received"}
        save: first                   # optional: keep the result as ${first....}
        wait: 5                       # optional: retry until it passes ({attempts, interval})
        level: warning                # optional: a failure is reported, the lab goes on
      - name: a command that must fail
        run: send ap wan UDP()
        error: "is not an IP packet"  # the message contains this (or give operators)

Expectations look at the result's ``data`` (what ``--json`` prints), plus
``summary`` and, for a dissected packet (``capture show TAP#N``, ``decode``),
``layers.LAYER.FIELD`` with bytes as hex text. Paths: ``key.key``, ``[N]``
(negative from the end), ``[A:B]`` (slice of a list or text), ``["a.b"]`` (a
key with dots), ``[KEY=VALUE]`` (first list item whose KEY is VALUE). A plain
value must be equal (``"0x1000"`` equals 4096); a mapping holds operators that
must all hold: ``eq ne contains excludes in matches len gt ge lt le exists hex``.

``${NAME.PATH}`` inserts a saved value into ``run:`` (as text) or an expectation
(with its type when it is the whole value); ``${lab.dir}`` is the directory of
the lab file (also ``lab.file``, ``lab.name``, ``lab.seed``); ``$${`` is a
literal ``${``. Quote YAML scalars that look like numbers but are not
(``"00001000"``): the checker refuses octal-looking ones.

Editors validate while typing with the shipped schema (``esplab/lab/schema.json``);
with the YAML language server, a first line such as
``# yaml-language-server: $schema=../esplab/lab/schema.json`` points at it.

Modules: :mod:`.loader` (YAML with positions), :mod:`.schema` (the shipped JSON
Schema and its validator), :mod:`.paths` (paths into a result), :mod:`.refs`
(``${...}`` references), :mod:`.expect` (operators), :mod:`.check` (both validation
phases, the typed lab), :mod:`.runline` (run lines parsed without running),
:mod:`.runner` (running steps), :mod:`.report` (text, JSON, JUnit), :mod:`.command`
(the REPL's ``lab`` command, and the registry of every command with it), :mod:`.cli`
(``esplab run`` and ``esplab check``).
"""
