// xterm.js writes its styles into <style> elements it creates, which isb's Content-Security-Policy (no inline
// styles) refuses. Those elements are made stand-ins here whose text becomes a constructed stylesheet instead
// (CSSOM, which the policy allows), adopted by the document while the element is in use.

class StyleStandIn extends HTMLElement {
  private sheet = new CSSStyleSheet();
  private adopted = false;

  override set textContent(text: string | null) {
    this.sheet.replaceSync(text || '');
    if (!this.adopted) {
      document.adoptedStyleSheets = [...document.adoptedStyleSheets, this.sheet];
      this.adopted = true;
    }
  }

  override get textContent(): string {
    return Array.from(this.sheet.cssRules).map((r) => r.cssText).join('\n');
  }

  override remove(): void {
    document.adoptedStyleSheets = document.adoptedStyleSheets.filter((s) => s !== this.sheet);
    this.adopted = false;
    super.remove();
  }
}

export function routeStylesThroughCssom(): void {
  customElements.define('isb-style', StyleStandIn);
  const create = document.createElement.bind(document);
  (document as any).createElement = (tag: string, options?: ElementCreationOptions) =>
    tag.toLowerCase() === 'style' ? create('isb-style') : create(tag, options);
}
