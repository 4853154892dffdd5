// What a page is to the shell: it renders into the main element and cleans up (streams, terminals) when left.
export interface Page {
  title: string;
  render(main: HTMLElement, params: string[]): void | Promise<void>;
  dispose?(): void;
}

export type PageFactory = () => Page;
