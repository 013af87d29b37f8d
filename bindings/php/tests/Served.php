<?php

declare(strict_types=1);

namespace AppStoreServer\Tests;

/**
 * A test server of Tests/support (mock_app_store.py, hostile_http.py) running until stop() or the end of the run:
 * it prints "PORT <n> ..." once it listens and stops when its standard input closes.
 */
final class Served
{
    /** @var resource */
    private $proc;
    private array $pipes = [];
    /** @var list<int> */
    public readonly array $ports;
    /** @var list<string> the words after the ready word */
    public readonly array $words;

    public function __construct(string $script, string ...$args)
    {
        $ready = 'PORT';
        if ($script === 'ocsp_harness.py') {
            $ready = 'READY'; // "READY <setup.json>"
        }
        $cmd = array_merge(['python3', Support::repo() . "/Tests/support/$script"], $args);
        $pipes = [];
        $this->proc = proc_open($cmd, [0 => ['pipe', 'r'], 1 => ['pipe', 'w'], 2 => STDERR], $pipes);
        $this->pipes = $pipes;
        $line = (string) fgets($this->pipes[1]);
        if (!str_starts_with($line, "$ready ")) {
            throw new \RuntimeException("$script said " . var_export($line, true));
        }
        $this->words = array_slice(explode(' ', trim($line)), 1);
        $this->ports = array_map('intval', $this->words);
    }

    public function url(): string
    {
        return 'http://127.0.0.1:' . $this->ports[0];
    }

    public function stop(): void
    {
        if (is_resource($this->pipes[0] ?? null)) {
            fclose($this->pipes[0]);
            fclose($this->pipes[1]);
            proc_close($this->proc);
        }
    }

    public function __destruct()
    {
        $this->stop();
    }
}
