/** The console's entry: its styles and its frame, mounted on the page's one element. */
import { render } from 'preact';
import { App } from './app';
import './styles.css';
import './board.css';
import './task.css';

render(<App />, document.getElementById('app')!);
