// The progress line on stderr: rewritten in place in a terminal, one line per phase otherwise (CI logs).

export class Progress {
  readonly #tty: boolean;
  readonly #started = Date.now();
  #phase = '';
  #lastDraw = 0;
  #drawn = false;

  constructor(private readonly stream: NodeJS.WriteStream = process.stderr) {
    this.#tty = stream.isTTY;
  }

  phase(text: string): void {
    this.#phase = text;
    if (this.#tty) this.#draw(text, true);
    else this.stream.write(`[bench ${this.#elapsed()}] ${text}\n`);
  }

  /** Counts within the current phase; redrawn at most ten times a second, and only in a terminal. */
  tick(done: number, total: number): void {
    if (!this.#tty) return;
    this.#draw(`${this.#phase} ${done}/${total}`, done >= total);
  }

  /** Clears the line before the table is printed. */
  done(): void {
    if (this.#tty && this.#drawn) this.stream.write('\r\x1b[2K');
    else if (!this.#tty) this.stream.write(`[bench ${this.#elapsed()}] done\n`);
  }

  #draw(text: string, force: boolean): void {
    const now = Date.now();
    if (!force && now - this.#lastDraw < 100) return;
    this.#lastDraw = now;
    this.#drawn = true;
    const columns = this.stream.columns > 20 ? this.stream.columns - 1 : 119;
    this.stream.write(`\r\x1b[2K${`[bench ${this.#elapsed()}] ${text}`.slice(0, columns)}`);
  }

  #elapsed(): string {
    return `${((Date.now() - this.#started) / 1000).toFixed(0).padStart(3)} s`;
  }
}
